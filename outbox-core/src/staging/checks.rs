//! What staging checks of an event: its type, ordering key and headers.

use super::{Delay, StageError, StagedEvent};
use crate::{Envelope, reserved};

/// The longest ordering key accepted, in bytes.
pub const MAX_ORDERING_KEY_LEN: usize = 128;
/// The longest event type accepted, in bytes.
pub const MAX_EVENT_TYPE_LEN: usize = 200;
/// The longest header name accepted, in bytes.
pub const MAX_HEADER_NAME_LEN: usize = 128;
/// The longest header value accepted, in bytes: room for a W3C `baggage`
/// header at its recommended limit.
pub const MAX_HEADER_VALUE_LEN: usize = 8 * 1024;
/// The most bytes all of an event's header names and values may take
/// together, well inside the smallest space a transport carries them in
/// (an AMQP frame, SQS's message attributes).
pub const MAX_HEADERS_LEN: usize = 16 * 1024;

pub(super) fn check_event_type(event_type: &str) -> Result<(), StageError> {
    let ok = !event_type.is_empty()
        && event_type.len() <= MAX_EVENT_TYPE_LEN
        && !event_type.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(StageError::EventType(event_type.to_owned()))
    }
}

/// Refuses an event that expires before it may first be relayed: at its
/// not-before time, or its delay after its staging (the commit comes later
/// still).
pub(super) fn check_schedule(event: &StagedEvent) -> Result<(), StageError> {
    let (Some(expires_at), Some(delay)) = (event.envelope.expires_at, event.delay) else {
        return Ok(());
    };
    let not_before = match delay {
        Delay::Until(at) => at,
        Delay::For(delay) => event.envelope.occurred_at + delay,
    };
    if expires_at > not_before {
        return Ok(());
    }
    Err(StageError::ExpiresBeforeRelay {
        event_id: event.envelope.event_id,
        expires_at,
        not_before,
    })
}

pub(super) fn check_options(envelope: &Envelope) -> Result<(), StageError> {
    if let Some(key) = &envelope.ordering_key {
        if key.is_empty() || key.len() > MAX_ORDERING_KEY_LEN {
            return Err(StageError::OrderingKey(key.clone()));
        }
    }
    let mut total = 0;
    for (name, value) in &envelope.headers {
        check_header(name, value)?;
        total += name.len() + value.len();
    }
    if total > MAX_HEADERS_LEN {
        return Err(StageError::Headers { len: total });
    }
    Ok(())
}

fn check_header(name: &str, value: &str) -> Result<(), StageError> {
    let invalid = |reason| {
        Err(StageError::Header {
            name: name.to_owned(),
            reason,
        })
    };
    if let Some(list) = reserved::owner_of(name) {
        return Err(StageError::ReservedHeader {
            name: name.to_owned(),
            owner: list.owner,
            why: list.why,
        });
    }
    if name.is_empty() || name.len() > MAX_HEADER_NAME_LEN {
        return invalid("names are 1 to 128 bytes");
    }
    if !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return invalid("names are printable ASCII without spaces or ':'");
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return invalid("values must not hold control characters");
    }
    if value.chars().any(|c| matches!(c, '\u{fffe}' | '\u{ffff}')) {
        return invalid("values must not hold the noncharacters U+FFFE or U+FFFF");
    }
    if value.len() > MAX_HEADER_VALUE_LEN {
        return invalid("values are at most 8 KiB");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
