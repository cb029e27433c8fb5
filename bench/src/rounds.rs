//! The orders in which a scenario's sides run, round after round, so that a
//! change in the machine's load falls on all of them alike.

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
