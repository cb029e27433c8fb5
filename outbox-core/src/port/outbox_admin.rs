//! What an operator asks of an outbox store beyond the relay's needs:
//! which routes exist, which rows failed and why, how much a purge would
//! delete, and what the inbox holds per consumer.
//!
//! Stores implement [`OutboxAdmin`] beside [`OutboxStore`]; the
//! `tidings-admin` crate builds its operations (and their safety rules) on
//! it.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use serde::{Serialize, Serializer};
use uuid::Uuid;

use super::{OutboxStore, PurgeRequest, StoreError};

/// Which failed rows of a route [`OutboxAdmin::failed`] returns. Every
/// filter set must match; the default matches every failed row (up to
/// [`FailedFilter::DEFAULT_LIMIT`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedFilter {
    /// Only rows of this event type.
    pub event_type: Option<String>,
    /// Only rows that failed at least this long ago.
    pub older_than: Option<Duration>,
    /// Only these events.
    pub ids: Option<Vec<Uuid>>,
    /// At most this many rows, oldest failure first.
    pub limit: usize,
}

impl FailedFilter {
    /// Rows returned when no limit is given.
    pub const DEFAULT_LIMIT: usize = 100;
}

impl Default for FailedFilter {
    fn default() -> Self {
        Self {
            event_type: None,
            older_than: None,
            ids: None,
            limit: Self::DEFAULT_LIMIT,
        }
    }
}

/// A failed row as an operator sees it. In JSON, as the admin API and the
/// command line show it, `failed_for` is `failed_secs` (seconds, to the
/// millisecond) and the payload is UTF-8 text, invalid bytes replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedRow {
    /// The event's id.
    pub event_id: Uuid,
    /// Its type.
    pub event_type: String,
    /// Where it was to be published.
    pub destination: String,
    /// Its ordering key, if any.
    pub ordering_key: Option<String>,
    /// Attempts started before it failed.
    pub attempts: u32,
    /// Why it failed.
    pub last_error: Option<String>,
    /// How long ago it failed.
    #[serde(rename = "failed_secs", serialize_with = "as_secs")]
    pub failed_for: Duration,
    /// The payload's content type.
    pub content_type: String,
    /// The payload.
    #[serde(serialize_with = "as_text")]
    pub payload: Bytes,
}

fn as_secs<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_millis() as f64 / 1000.0)
}

fn as_text<S: Serializer>(payload: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&String::from_utf8_lossy(payload))
}

/// What the inbox holds for one consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerStats {
    /// The consumer's name.
    pub consumer: String,
    /// Events marked handled.
    pub marks: u64,
    /// Age of the oldest mark.
    pub oldest_mark_age: Option<Duration>,
}

/// An operator's view of an outbox store.
pub trait OutboxAdmin: OutboxStore {
    /// Every route the store knows, in name order: each route recorded
    /// when it was first staged (a store that records them), and each
    /// route with at least one row, so a route whose rows were all
    /// published and deleted is still listed.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Schema`] when the outbox table
    /// is missing; [`StoreError::Backend`] for any other database error.
    fn routes(&self) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Failed rows of `route` matching `filter`, oldest failure first.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Schema`] when the outbox table
    /// is missing; [`StoreError::Corrupt`] when a failed row cannot be read;
    /// [`StoreError::Backend`] for any other database error.
    fn failed(
        &self,
        route: &str,
        filter: &FailedFilter,
    ) -> impl Future<Output = Result<Vec<FailedRow>, StoreError>> + Send;

    /// How many rows [`OutboxStore::purge`] would delete with `request` if
    /// repeated until done (the request's limit is ignored).
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Schema`] when the outbox table
    /// is missing; [`StoreError::Backend`] for any other database error.
    fn count_purgeable(
        &self,
        route: &str,
        request: PurgeRequest,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// The inbox's marks per consumer, in consumer order.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Schema`] when the inbox table is
    /// missing; [`StoreError::Backend`] for any other database error.
    fn consumers(&self) -> impl Future<Output = Result<Vec<ConsumerStats>, StoreError>> + Send;

    /// How long ago `consumer` marked `event_id` handled, or `None` when
    /// its inbox has no such mark (never handled, or the mark was purged).
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Schema`] when the inbox table is
    /// missing; [`StoreError::Backend`] for any other database error.
    fn mark_age(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> impl Future<Output = Result<Option<Duration>, StoreError>> + Send;
}
