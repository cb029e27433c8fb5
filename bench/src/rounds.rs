//! The orders in which a scenario's sides run, round after round, so that a
//! change in the machine's load falls on all of them alike; and the rounds
//! of the drain scenarios, each draining a backlog staged before it.

use tidings_core::OutboxSpec;
use tidings_postgres::PgOutboxStore;

use crate::env::Env;
use crate::load::stage_pending;
use crate::payload::Payload;

/// The orders of `sides` over the rounds: a balanced Latin square of them
/// (Williams' design, whose first row is `0, 1, n-1, 2, n-2, ..`) followed
/// by its rows reversed. Each side runs in each position twice and right
/// after each other side equally often; with three sides, these are the
/// six orders there are.
pub(crate) fn balanced<S: Copy, const N: usize>(sides: [S; N]) -> Vec<[S; N]> {
    let first: [usize; N] = std::array::from_fn(|j| match j {
        0 => 0,
        j if j % 2 == 1 => j.div_ceil(2),
        j => N - j / 2,
    });
    let square: Vec<[S; N]> = (0..N)
        .map(|i| std::array::from_fn(|j| sides[(first[j] + i) % N]))
        .collect();
    let reversed = square.iter().map(|row| {
        let mut row = *row;
        row.reverse();
        row
    });
    square.iter().copied().chain(reversed).collect()
}

/// The rounds of a drain scenario: the orders of its sides, and the
/// backlog staged before each round.
pub(crate) struct DrainRounds<S, const N: usize> {
    /// The sides' order in each round, as [`balanced`] gives them.
    pub(crate) orders: Vec<[S; N]>,
    /// Events staged into each store before each round.
    pub(crate) per_round: usize,
}

impl<S: Copy, const N: usize> DrainRounds<S, N> {
    /// The rounds of `sides`, `events` shared among them (rounded up), on
    /// `stores`, whose autovacuum is stopped: [`stage`](Self::stage)
    /// vacuums them between rounds instead.
    pub(crate) async fn new(
        env: &Env,
        stores: &[PgOutboxStore],
        sides: [S; N],
        events: usize,
    ) -> anyhow::Result<Self> {
        for store in stores {
            env.stop_autovacuum(store).await?;
        }
        let orders = balanced(sides);
        let per_round = events.div_ceil(orders.len());
        Ok(Self { orders, per_round })
    }

    /// The events of every round together.
    pub(crate) fn total(&self) -> usize {
        self.per_round * self.orders.len()
    }

    /// Stages a round's events of each spec into its store, then vacuums
    /// the store.
    pub(crate) async fn stage<'a>(
        &self,
        env: &Env,
        backlogs: impl IntoIterator<Item = (&'a PgOutboxStore, &'static OutboxSpec<Payload>)>,
    ) -> anyhow::Result<()> {
        for (store, spec) in backlogs {
            stage_pending(store, spec, self.per_round).await?;
            env.vacuum(store).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::balanced;

    #[test]
    fn three_sides_run_in_every_order() {
        let orders = balanced([0, 1, 2]);
        let expected = [
            [0, 1, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
            [0, 2, 1],
            [1, 0, 2],
        ];
        assert_eq!(orders, expected);
    }

    #[test]
    fn four_sides_run_in_each_position_and_after_each_other_twice() {
        let orders = balanced([0, 1, 2, 3]);
        assert_eq!(orders.len(), 8);
        for side in 0..4 {
            for position in 0..4 {
                let here = orders.iter().filter(|o| o[position] == side).count();
                assert_eq!(here, 2, "side {side} at {position}");
            }
            for other in (0..4).filter(|&o| o != side) {
                let after = (orders.iter())
                    .flat_map(|o| o.windows(2))
                    .filter(|w| w[0] == other && w[1] == side)
                    .count();
                assert_eq!(after, 2, "side {side} after {other}");
            }
        }
    }
}
