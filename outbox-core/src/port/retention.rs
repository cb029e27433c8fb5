//! What a store does with a row once its event is published.

/// What happens to a row (a document, on MongoDB) once its event is
/// published. Every store takes one in its options: `PgOutboxOptions`,
/// `MongoOutboxOptions` and
/// [`MemoryStoreOptions`](crate::memory::MemoryStoreOptions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retention {
    /// Delete it in the write that marks it published (the default): the
    /// outbox holds only unfinished and failed rows.
    #[default]
    Delete,
    /// Keep it as `published`, for audits or replays, until
    /// [`purge`](crate::OutboxStore::purge) removes it.
    Keep,
}
