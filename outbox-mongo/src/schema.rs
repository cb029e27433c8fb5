//! The shape of stored documents: field names, status values and how times
//! and ids are represented.
//!
//! Times are whole microseconds since the Unix epoch (`i64`), not BSON dates,
//! which keep only milliseconds: a staged `occurred_at` reads back exactly.
//! Event ids and lease tokens are BSON binary UUIDs (subtype 4).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson};
use uuid::Uuid;

/// Field names of an outbox document.
pub(crate) mod field {
    pub(crate) const ROUTE: &str = "route";
    pub(crate) const EVENT_ID: &str = "event_id";
    pub(crate) const DESTINATION: &str = "destination";
    pub(crate) const EVENT_TYPE: &str = "event_type";
    pub(crate) const PAYLOAD: &str = "payload";
    pub(crate) const CONTENT_TYPE: &str = "content_type";
    /// An array of `{name, value}` documents: header names may hold `.` or
    /// `$`, which field names should not.
    pub(crate) const HEADERS: &str = "headers";
    pub(crate) const HEADER_NAME: &str = "name";
    pub(crate) const HEADER_VALUE: &str = "value";
    pub(crate) const ORDERING_KEY: &str = "ordering_key";
    pub(crate) const CORRELATION_ID: &str = "correlation_id";
    pub(crate) const CAUSATION_ID: &str = "causation_id";
    pub(crate) const TENANT_ID: &str = "tenant_id";
    pub(crate) const OCCURRED_AT: &str = "occurred_at_us";
    pub(crate) const HLC: &str = "hlc";
    /// The event's expiry, where it has one.
    pub(crate) const EXPIRES_AT: &str = "expires_at_us";
    /// Creation order: a hybrid-clock stamp taken at commit, increasing
    /// within a process and close to wall time across processes.
    pub(crate) const SEQ: &str = "seq";
    pub(crate) const STATUS: &str = "status";
    pub(crate) const AVAILABLE_AT: &str = "available_at_us";
    pub(crate) const LEASE: &str = "lease";
    pub(crate) const LEASE_EXPIRES_AT: &str = "lease_expires_at_us";
    pub(crate) const ATTEMPTS_STARTED: &str = "attempts_started";
    pub(crate) const ATTEMPTS_FINISHED: &str = "attempts_finished";
    pub(crate) const LAST_ERROR: &str = "last_error";
    pub(crate) const FINISHED_AT: &str = "finished_at_us";
    /// Inbox: the consumer's name.
    pub(crate) const CONSUMER: &str = "consumer";
    /// Inbox: when the mark was recorded.
    pub(crate) const MARKED_AT: &str = "marked_at_us";
    /// When a route was first staged, in the routes collection.
    pub(crate) const FIRST_STAGED_AT: &str = "first_staged_at_us";
    /// Inbox attempts: when the count last changed. The counts themselves
    /// are kept in [`ATTEMPTS_STARTED`] and [`ATTEMPTS_FINISHED`].
    pub(crate) const TOUCHED_AT: &str = "touched_at_us";
}

/// Values of [`field::STATUS`].
pub(crate) mod status {
    pub(crate) const PENDING: &str = "pending";
    pub(crate) const IN_FLIGHT: &str = "in_flight";
    pub(crate) const PUBLISHED: &str = "published";
    pub(crate) const FAILED: &str = "failed";
}

/// A time as microseconds since the Unix epoch.
pub(crate) fn micros(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// The time `micros` microseconds after the Unix epoch.
pub(crate) fn from_micros(micros: i64) -> SystemTime {
    let offset = Duration::from_micros(micros.unsigned_abs());
    if micros >= 0 {
        UNIX_EPOCH + offset
    } else {
        UNIX_EPOCH - offset
    }
}

/// `time + delay` in microseconds, saturating far in the future.
pub(crate) fn micros_after(time: SystemTime, delay: Duration) -> i64 {
    let delay = i64::try_from(delay.as_micros()).unwrap_or(i64::MAX);
    micros(time).saturating_add(delay)
}

/// How long before `now` the time `at` was, both as microseconds since
/// the Unix epoch; zero where `at` is later.
pub(crate) fn age(now: i64, at: i64) -> Duration {
    Duration::from_micros(u64::try_from(now.saturating_sub(at)).unwrap_or_default())
}

/// A count as stored, whatever integer type the server kept it in; zero
/// where there is none.
pub(crate) fn count(value: Option<&Bson>) -> u64 {
    match value {
        Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or_default(),
        Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or_default(),
        _ => 0,
    }
}

/// A UUID as BSON binary subtype 4.
pub(crate) fn uuid(id: Uuid) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Uuid,
        bytes: id.as_bytes().to_vec(),
    })
}

/// UUIDs as a BSON array, for `$in`.
pub(crate) fn uuids(ids: &[Uuid]) -> Vec<Bson> {
    ids.iter().copied().map(uuid).collect()
}

/// A count or limit as BSON's signed 64-bit integer.
pub(crate) fn int64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_at_microsecond_precision() {
        let now = tidings_core::truncate_to_micros(SystemTime::now());
        assert_eq!(from_micros(micros(now)), now);
        let before = UNIX_EPOCH - Duration::from_micros(1_500);
        assert_eq!(micros(before), -1_500);
        assert_eq!(from_micros(-1_500), before);
        assert_eq!(micros_after(now, Duration::MAX), i64::MAX);
    }
}
