//! What other producers send differently: ids that are not UUIDs and times
//! with offsets.

use std::time::SystemTime;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::clock::truncate_to_micros;

/// The namespace of the event ids made from other producers' ids.
const NAMESPACE: Uuid = uuid::uuid!("94d4490f-cbb2-437f-b7a0-7877edce4922");

/// The event id tidings gives an event whose CloudEvents `id` is not a
/// UUID: a UUIDv5 of its `source` and `id`, which CloudEvents makes unique
/// together, so every delivery of the event gets the same id and the inbox
/// dedupes them.
///
/// ```
/// use tidings_core::cloudevents::event_id_for;
///
/// let id = event_id_for("/shop/orders", "17");
/// assert_eq!(id, event_id_for("/shop/orders", "17"));
/// assert_ne!(id, event_id_for("/shop/orders", "18"));
/// assert_ne!(event_id_for("/a", "b/c"), event_id_for("/a/b", "c"));
/// ```
pub fn event_id_for(source: &str, id: &str) -> Uuid {
    // The source's length first, so no two (source, id) pairs share a name.
    let name = format!("{}:{source}{id}", source.len());
    Uuid::new_v5(&NAMESPACE, name.as_bytes())
}

/// An RFC 3339 time with any offset, to the microsecond.
pub(super) fn parse_time(value: &str) -> Result<SystemTime, String> {
    let parsed = OffsetDateTime::parse(value, &Rfc3339).map_err(|e| e.to_string())?;
    Ok(truncate_to_micros(parsed.into()))
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    #[test]
    fn offsets_name_the_same_instant() {
        let utc = parse_time("2026-11-25T12:00:00.5Z").unwrap();
        assert_eq!(parse_time("2026-11-25T14:00:00.5+02:00").unwrap(), utc);
        assert_eq!(parse_time("2026-11-25T06:30:00.5-05:30").unwrap(), utc);
        let since = utc.duration_since(UNIX_EPOCH).unwrap();
        assert_eq!(since.subsec_millis(), 500);
        assert_eq!(since.as_secs() % 86_400, 12 * 3_600);
    }

    #[test]
    fn times_keep_microseconds_only() {
        let nanos = parse_time("2026-11-25T12:00:00.123456789Z").unwrap();
        assert_eq!(nanos, parse_time("2026-11-25T12:00:00.123456Z").unwrap());
    }

    #[test]
    fn malformed_times_say_why() {
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("2026-11-25 12:00:00").is_err());
    }
}
