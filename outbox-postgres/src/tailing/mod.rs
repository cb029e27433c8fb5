//! Log tailing: a relay that reads the outbox from a logical replication
//! slot instead of claiming rows, in one of two modes.
//!
//! In [`TailMode::Table`] events are staged into the outbox table as
//! always, and the relay reads their inserts from a publication on that
//! table. In [`TailMode::Messages`] staging writes no row at all: each
//! event becomes a transactional logical decoding message
//! (`pg_logical_emit_message`) of the business transaction, and only
//! events that fail for good are written to the outbox table, where the
//! CLI, the console, requeue and purge find them.
//!
//! These are the store's side of log tailing: the staging, the slot and
//! publication [`migrate`](crate::PgOutboxStore::migrate) creates, and the
//! requeue of failed events, which stages them again. The reader itself
//! is [`WalStore`](crate::wal::WalStore), behind the `wal` feature.

mod message;
mod prepare;
mod requeue;
pub(crate) mod slot;
pub(crate) mod statements;

#[cfg_attr(not(feature = "wal"), allow(unused_imports))]
pub(crate) use message::decode;
pub(crate) use message::encode;
pub use message::{MAX_MESSAGE_BYTES, MessageError};
pub use slot::SlotState;

use tidings_core::StoreError;
use tidings_core::port::StoreNameRule;

use crate::names;

/// What the log-tailing relay reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailMode {
    /// The inserts into the outbox table, from a publication on it.
    Table,
    /// Logical decoding messages written by staging; no outbox row.
    Messages,
}

/// Log tailing of a store: its mode, its replication slot and its
/// publication.
///
/// ```
/// use tidings_postgres::{LogTailing, PgOutboxOptions, TailMode};
///
/// let options = PgOutboxOptions::new()
///     .table("order_outbox")
///     .log_tailing(LogTailing::messages().slot("orders_relay"));
/// let tailing = options.get_log_tailing().unwrap();
/// assert_eq!(tailing.mode(), TailMode::Messages);
/// assert_eq!(tailing.get_slot(), Some("orders_relay"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTailing {
    mode: TailMode,
    slot: Option<String>,
    publication: Option<String>,
}

impl LogTailing {
    /// Tails the inserts into the outbox table.
    pub fn table() -> Self {
        Self::new(TailMode::Table)
    }

    /// Tails logical decoding messages; staging writes no row.
    pub fn messages() -> Self {
        Self::new(TailMode::Messages)
    }

    /// Tails in `mode`, as [`table`](Self::table) or
    /// [`messages`](Self::messages) do, for a mode chosen at run time.
    ///
    /// ```
    /// use tidings_postgres::{LogTailing, TailMode};
    ///
    /// assert_eq!(LogTailing::new(TailMode::Table), LogTailing::table());
    /// ```
    pub fn new(mode: TailMode) -> Self {
        Self {
            mode,
            slot: None,
            publication: None,
        }
    }

    /// The mode.
    pub fn mode(&self) -> TailMode {
        self.mode
    }

    /// The replication slot; default `<table>_slot`. Lower-case ASCII
    /// letters, digits and `_`, at most 63 bytes.
    pub fn slot(mut self, slot: impl Into<String>) -> Self {
        self.slot = Some(slot.into());
        self
    }

    /// The slot, where one was set.
    pub fn get_slot(&self) -> Option<&str> {
        self.slot.as_deref()
    }

    /// The publication; default `<table>_publication`. The same rule as
    /// the slot's.
    pub fn publication(mut self, publication: impl Into<String>) -> Self {
        self.publication = Some(publication.into());
        self
    }

    /// The publication, where one was set.
    pub fn get_publication(&self) -> Option<&str> {
        self.publication.as_deref()
    }
}

/// Replication slot and publication names: the rule of table names, up to
/// PostgreSQL's 63 bytes; the replication protocol carries them unquoted.
const RULE: StoreNameRule = StoreNameRule {
    max_len: 63,
    ..names::RULE
};

/// The validated names of one store's log tailing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tailing {
    pub(crate) mode: TailMode,
    pub(crate) slot: String,
    pub(crate) publication: String,
    /// The prefix of the store's messages: `tidings:<schema>.<table>`.
    pub(crate) prefix: String,
}

impl Tailing {
    /// Checks the names, filling in the defaults from the outbox table.
    pub(crate) fn new(tailing: &LogTailing, schema: &str, table: &str) -> Result<Self, StoreError> {
        let slot = tailing
            .slot
            .clone()
            .unwrap_or_else(|| format!("{table}_slot"));
        let publication = tailing
            .publication
            .clone()
            .unwrap_or_else(|| format!("{table}_publication"));
        RULE.check("replication slot", &slot)?;
        RULE.check("publication", &publication)?;
        Ok(Self {
            mode: tailing.mode,
            slot,
            publication,
            prefix: format!("tidings:{schema}.{table}"),
        })
    }
}

#[cfg(test)]
mod tests;
