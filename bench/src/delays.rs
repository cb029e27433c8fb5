//! Commit-to-publish delays: when each event's commit returned against
//! when its publish was seen, and their quantiles.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use uuid::Uuid;

/// The delay of every committed event that was published, sorted; a
/// publish seen before its commit returned counts as zero.
pub(crate) fn commit_to_publish(
    committed: &HashMap<Uuid, Instant>,
    published: &[(Uuid, Instant)],
) -> Vec<Duration> {
    let mut delays: Vec<Duration> = published
        .iter()
        .filter_map(|(id, at)| committed.get(id).map(|c| at.saturating_duration_since(*c)))
        .collect();
    delays.sort();
    delays
}

/// The `q` quantile of `sorted` (nearest rank), zero when empty.
pub(crate) fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1);
    sorted.get(i).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let ms = |n: u64| Duration::from_millis(n);
        let sorted: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(quantile(&sorted, 0.5), ms(50));
        assert_eq!(quantile(&sorted, 0.99), ms(99));
        assert_eq!(quantile(&[], 0.99), Duration::ZERO);
    }
}
