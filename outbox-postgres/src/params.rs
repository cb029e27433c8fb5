//! Values bound as statement parameters where a Rust type does not fit
//! PostgreSQL's as it is: durations as interval microseconds, row counts
//! as `LIMIT`s. Every part of the store binds them, so they stand apart
//! from all of it.

use std::time::Duration;

/// The longest interval handed to PostgreSQL, so `now() + interval` never
/// leaves the timestamp range: about 100 years.
const MAX_INTERVAL_MICROS: i64 = 100 * 366 * 24 * 3600 * 1_000_000;

/// A duration as whole microseconds for an interval parameter, capped at
/// about 100 years.
pub(crate) fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros())
        .unwrap_or(i64::MAX)
        .min(MAX_INTERVAL_MICROS)
}

/// A row count as a `LIMIT` parameter.
pub(crate) fn limit(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_become_capped_micros() {
        assert_eq!(micros(Duration::from_millis(1500)), 1_500_000);
        assert_eq!(micros(Duration::MAX), MAX_INTERVAL_MICROS);
        assert_eq!(limit(usize::MAX), i64::MAX);
    }
}
