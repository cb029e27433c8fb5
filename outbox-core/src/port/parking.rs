//! What every acker writes when it parks a message: the time, and a
//! reason cut to what the broker's header takes.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch, as a parked message carries
/// it in its [`PARKED_AT_HEADER`](super::PARKED_AT_HEADER).
pub fn parked_at_now() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        .to_string()
}

/// `reason` cut to at most `max` bytes on a character boundary, for a
/// header of limited size.
///
/// ```
/// use tidings_core::port::truncate_reason;
///
/// assert_eq!(truncate_reason("héllo", 2), "h");
/// assert_eq!(truncate_reason("abc", 10), "abc");
/// ```
pub fn truncate_reason(reason: &str, max: usize) -> &str {
    if reason.len() <= max {
        return reason;
    }
    let mut end = max;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    &reason[..end]
}
