//! How the outbox table is laid out: one plain table, or rotated slots that
//! are truncated once drained, so a held snapshot cannot make claims slow.

/// How the outbox table is laid out.
///
/// ```
/// use tidings_postgres::{Layout, PgOutboxOptions};
///
/// let options = PgOutboxOptions::new().layout(Layout::Rotated);
/// assert_eq!(options.get_layout(), Layout::Rotated);
/// assert_eq!(PgOutboxOptions::new().get_layout(), Layout::Plain);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One table (the default). Each published row leaves a dead version
    /// that vacuum removes; while a long transaction or a lagging
    /// replication slot holds the vacuum horizon back, none is removed, and
    /// every claim steps over all of them.
    #[default]
    Plain,
    /// The table is partitioned into [`SLOTS`] slots, and each transaction
    /// stages into the slot of the second it stages in, in turn. Relays of
    /// the store truncate each slot while two others take the staging: the
    /// few rows still in it (retries, failures, rows in flight) move to the
    /// current slot first, keeping their ids and so their order. A
    /// truncated slot leaves no dead versions, whatever the horizon, so
    /// claims step over at most a few seconds of them.
    ///
    /// A slot is truncated only when no transaction holds a lock on it, so
    /// a transaction that has itself read the outbox keeps its slots from
    /// being truncated until it ends, and a slot holding more than
    /// [`MAX_MOVED`] live rows (a backlog) waits for its next turn.
    ///
    /// [`migrate`](crate::PgOutboxStore::migrate) converts a plain outbox
    /// in place, keeping every row with its id, state and attempts.
    /// Published rows are always deleted:
    /// [`Retention::Keep`](crate::Retention::Keep) is refused.
    Rotated,
}

/// The slots of a [rotated](Layout::Rotated) outbox.
pub const SLOTS: i16 = 4;

/// How long, in seconds, each slot of a [rotated](Layout::Rotated) outbox
/// takes the staging.
pub const SLOT_SECONDS: i16 = 1;

/// The most live rows a truncation moves out of a slot; a slot holding
/// more waits for its next turn.
pub const MAX_MOVED: i64 = 10_000;

/// The slot a statement stages into: the second it started in, counted in
/// slots, modulo [`SLOTS`]. The statement's own start, not its
/// transaction's, so a long transaction stages into the current slot.
pub(crate) fn current_slot_sql() -> String {
    format!(
        "(floor(extract(epoch from statement_timestamp()) / {SLOT_SECONDS})::bigint % {SLOTS})::smallint"
    )
}

/// The name of slot `slot`'s partition, for quoting.
pub(crate) fn partition(outbox: &str, slot: i16) -> String {
    format!("{outbox}_slot_{slot}")
}
