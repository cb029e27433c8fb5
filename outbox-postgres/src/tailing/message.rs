//! The content of a logical decoding message carrying one staged event.
//!
//! A version byte, then the event's fields in a fixed order: the id (16
//! bytes), the delay and the time it occurred at (microseconds, signed
//! 64-bit), the hybrid-clock stamp (a presence byte and 64 bits), the
//! expiry (a presence byte and microseconds since the epoch, 64 bits; from
//! version 2 on), the route, destination, event type and content type (each a 32-bit length
//! and UTF-8 bytes), the ordering key, correlation, causation and tenant
//! ids (each a presence byte and a string), the headers (a 32-bit count
//! and as many pairs of strings) and the payload (a 32-bit length and its
//! bytes). Integers are big-endian. A length past the end, text that is
//! not UTF-8 or bytes left over make the message unreadable, never a
//! panic or a guess.

use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use tidings_core::{Envelope, Headers, Hlc, StagedEvent};
use uuid::Uuid;

/// The version byte of the format above. Version 1, the same without the
/// expiry, is still read: messages staged before an upgrade stay in the
/// slot until relayed.
const VERSION: u8 = 2;

/// The largest message the relay reads: 64 MiB. Staging refuses larger
/// events.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// A message that cannot be read back into an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable outbox message: {0}")]
pub struct MessageError(pub(crate) String);

/// An event read from the log, with how long it waits before its first
/// publish.
#[cfg_attr(not(feature = "wal"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tailed {
    pub(crate) envelope: Envelope,
    pub(crate) delay: Duration,
}

/// Encodes one staged event.
pub(crate) fn encode(event: &StagedEvent) -> Result<Vec<u8>, MessageError> {
    let e = &event.envelope;
    let mut out = Vec::with_capacity(96 + e.payload.len());
    out.push(VERSION);
    out.extend_from_slice(e.event_id.as_bytes());
    // A not-before time travels as the delay from the event's staging to
    // it: the reader counts the delay from the commit, which comes after
    // the staging, so the event is never relayed before that time.
    let delay = event
        .delay
        .map_or(Duration::ZERO, |delay| delay.after(e.occurred_at));
    out.extend_from_slice(&micros(delay).to_be_bytes());
    let occurred = e.occurred_at.duration_since(UNIX_EPOCH).unwrap_or_default();
    out.extend_from_slice(&micros(occurred).to_be_bytes());
    match e.hlc {
        Some(hlc) => {
            out.push(1);
            out.extend_from_slice(&hlc.as_u64().to_be_bytes());
        }
        None => out.push(0),
    }
    match e.expires_at {
        Some(at) => {
            out.push(1);
            let at = at.duration_since(UNIX_EPOCH).unwrap_or_default();
            out.extend_from_slice(&micros(at).to_be_bytes());
        }
        None => out.push(0),
    }
    for text in [&e.route, &e.destination, &e.event_type, &e.content_type] {
        put(&mut out, text.as_bytes())?;
    }
    for text in [
        &e.ordering_key,
        &e.correlation_id,
        &e.causation_id,
        &e.tenant_id,
    ] {
        match text {
            Some(text) => {
                out.push(1);
                put(&mut out, text.as_bytes())?;
            }
            None => out.push(0),
        }
    }
    out.extend_from_slice(&length(e.headers.len())?.to_be_bytes());
    for (name, value) in &e.headers {
        put(&mut out, name.as_bytes())?;
        put(&mut out, value.as_bytes())?;
    }
    put(&mut out, &e.payload)?;
    if out.len() > MAX_MESSAGE_BYTES {
        return Err(MessageError(format!(
            "event {} encodes to {} bytes, more than the {MAX_MESSAGE_BYTES} a message may hold",
            e.event_id,
            out.len()
        )));
    }
    Ok(out)
}

/// Decodes one message's content.
#[cfg_attr(not(feature = "wal"), allow(dead_code))]
pub(crate) fn decode(content: &Bytes) -> Result<Tailed, MessageError> {
    let mut r = Reader {
        buf: content,
        at: 0,
    };
    let version = r.byte()?;
    if version != VERSION && version != 1 {
        return Err(MessageError(format!("unknown format version {version}")));
    }
    let event_id = Uuid::from_bytes(r.array::<16>()?);
    let delay = Duration::from_micros(r.u64()?);
    let occurred_at = UNIX_EPOCH + Duration::from_micros(r.u64()?);
    let hlc = match r.byte()? {
        0 => None,
        _ => Some(Hlc::from_u64(r.u64()?)),
    };
    let expires_at = match r.byte_if(version > 1)? {
        0 => None,
        _ => Some(UNIX_EPOCH + Duration::from_micros(r.u64()?)),
    };
    let route = r.text()?;
    let destination = r.text()?;
    let event_type = r.text()?;
    let content_type = r.text()?;
    let ordering_key = r.optional()?;
    let correlation_id = r.optional()?;
    let causation_id = r.optional()?;
    let tenant_id = r.optional()?;
    let count = r.u32()?;
    let mut headers = Headers::new();
    for _ in 0..count {
        let name = r.text()?;
        headers.insert(name, r.text()?);
    }
    let payload = r.bytes()?;
    if r.at != content.len() {
        return Err(MessageError(format!(
            "{} bytes left over after the payload",
            content.len() - r.at
        )));
    }
    let envelope = Envelope {
        event_id,
        event_type,
        route,
        destination,
        payload,
        content_type,
        headers,
        ordering_key,
        correlation_id,
        causation_id,
        tenant_id,
        occurred_at,
        hlc,
        expires_at,
        attempts: 0,
    };
    Ok(Tailed { envelope, delay })
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn length(len: usize) -> Result<u32, MessageError> {
    u32::try_from(len).map_err(|_| MessageError(format!("a field of {len} bytes is too long")))
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), MessageError> {
    out.extend_from_slice(&length(bytes.len())?.to_be_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Reads the fields in order, checking every length against what is left.
#[cfg_attr(not(feature = "wal"), allow(dead_code))]
struct Reader<'a> {
    buf: &'a Bytes,
    at: usize,
}

#[cfg_attr(not(feature = "wal"), allow(dead_code))]
impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<std::ops::Range<usize>, MessageError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.buf.len());
        let end = end.ok_or_else(|| {
            MessageError(format!(
                "a field of {n} bytes at byte {} runs past the end ({} bytes)",
                self.at,
                self.buf.len()
            ))
        })?;
        let range = self.at..end;
        self.at = end;
        Ok(range)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], MessageError> {
        let range = self.take(N)?;
        let mut out = [0; N];
        out.copy_from_slice(&self.buf[range]);
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, MessageError> {
        Ok(self.array::<1>()?[0])
    }

    /// The next byte where `present`, else 0, for a field an older
    /// version does not have.
    fn byte_if(&mut self, present: bool) -> Result<u8, MessageError> {
        match present {
            true => self.byte(),
            false => Ok(0),
        }
    }

    fn u32(&mut self) -> Result<u32, MessageError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, MessageError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn bytes(&mut self) -> Result<Bytes, MessageError> {
        let len = self.u32()? as usize;
        let range = self.take(len)?;
        Ok(self.buf.slice(range))
    }

    fn text(&mut self) -> Result<String, MessageError> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| MessageError(format!("text before byte {} is not UTF-8", self.at)))
    }

    fn optional(&mut self) -> Result<Option<String>, MessageError> {
        match self.byte()? {
            0 => Ok(None),
            _ => self.text().map(Some),
        }
    }
}

#[cfg(test)]
mod tests;
