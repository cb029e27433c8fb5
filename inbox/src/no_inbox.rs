//! A store for consumers that need no dedupe.

use tidings_core::{Attempts, InboxAttempts, InboxError, InboxKey, InboxMark, InboxStore};

/// Records nothing and never reports a duplicate: for handlers that are
/// idempotent on their own. Their transaction is `()`.
///
/// It counts no attempts either, so a consumer without an inbox parks on
/// the broker's delivery count against `max_deliveries`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInbox;

impl InboxStore for NoInbox {
    type Tx = ();

    async fn begin(&self) -> Result<(), InboxError> {
        Ok(())
    }

    async fn mark(&self, _tx: &mut (), _key: InboxKey<'_>) -> Result<InboxMark, InboxError> {
        Ok(InboxMark::Fresh(()))
    }

    async fn commit(&self, _tx: ()) -> Result<(), InboxError> {
        Ok(())
    }

    async fn rollback(&self, _tx: ()) -> Result<(), InboxError> {
        Ok(())
    }
}

/// Counts nothing: a consumer without an inbox parks on the broker's count.
impl InboxAttempts for NoInbox {
    async fn start_attempt(&self, _key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        Ok(None)
    }

    async fn attempts(&self, _key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        Ok(None)
    }

    async fn finish_attempt(&self, _key: InboxKey<'_>, _counted: bool) -> Result<(), InboxError> {
        Ok(())
    }

    async fn clear_attempts(&self, _tx: &mut (), _key: InboxKey<'_>) -> Result<(), InboxError> {
        Ok(())
    }
}
