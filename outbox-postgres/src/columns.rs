//! The event columns of an outbox row, read into an envelope.
//!
//! A claim's rows and the inserts that log tailing reads in table mode
//! carry the same columns in different encodings; each source reads one
//! column at a time, and [`envelope`] names which columns make an event,
//! in the order of the outbox table.

use std::time::SystemTime;

use bytes::Bytes;
use tidings_core::{Envelope, Headers, Hlc};
use uuid::Uuid;

/// A row's event columns, read one at a time in the table's order.
pub(crate) trait EventColumns {
    /// Why a column could not be read.
    type Error;

    /// A `text` column that may not be NULL.
    fn text(&mut self, column: &'static str) -> Result<String, Self::Error>;

    /// A `text` column that may be NULL.
    fn optional(&mut self, column: &'static str) -> Result<Option<String>, Self::Error>;

    /// The `payload` column, as it is.
    fn payload(&mut self) -> Result<Bytes, Self::Error>;

    /// The `headers` column, a JSON object of strings.
    fn headers(&mut self) -> Result<Headers, Self::Error>;

    /// The `occurred_at` column, which may not be NULL.
    fn occurred_at(&mut self) -> Result<SystemTime, Self::Error>;

    /// The `hlc` column, where the row has a stamp.
    fn hlc(&mut self) -> Result<Option<Hlc>, Self::Error>;

    /// The `expires_at` column, where the event expires.
    fn expires_at(&mut self) -> Result<Option<SystemTime>, Self::Error>;
}

/// Reads the columns after `event_id` into the event they make, with no
/// attempt counted.
pub(crate) fn envelope<C: EventColumns>(
    columns: &mut C,
    event_id: Uuid,
) -> Result<Envelope, C::Error> {
    Ok(Envelope {
        event_id,
        route: columns.text("route")?,
        destination: columns.text("destination")?,
        event_type: columns.text("event_type")?,
        payload: columns.payload()?,
        content_type: columns.text("content_type")?,
        headers: columns.headers()?,
        ordering_key: columns.optional("ordering_key")?,
        correlation_id: columns.optional("correlation_id")?,
        causation_id: columns.optional("causation_id")?,
        tenant_id: columns.optional("tenant_id")?,
        occurred_at: columns.occurred_at()?,
        hlc: columns.hlc()?,
        expires_at: columns.expires_at()?,
        attempts: 0,
    })
}
