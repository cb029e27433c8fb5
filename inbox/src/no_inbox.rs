//! A store for consumers that need no dedupe.

use std::time::Duration;

use tidings_core::{Attempts, InboxError, InboxMark, InboxStore};
use uuid::Uuid;

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

    async fn mark(
        &self,
        _tx: &mut (),
        _consumer: &str,
        _event_id: Uuid,
    ) -> Result<InboxMark, InboxError> {
        Ok(InboxMark::Fresh(()))
    }

    async fn commit(&self, _tx: ()) -> Result<(), InboxError> {
        Ok(())
    }

    async fn rollback(&self, _tx: ()) -> Result<(), InboxError> {
        Ok(())
    }

    async fn start_attempt(
        &self,
        _consumer: &str,
        _event_id: Uuid,
    ) -> Result<Option<Attempts>, InboxError> {
        Ok(None)
    }

    async fn attempts(
        &self,
        _consumer: &str,
        _event_id: Uuid,
    ) -> Result<Option<Attempts>, InboxError> {
        Ok(None)
    }

    async fn finish_attempt(
        &self,
        _consumer: &str,
        _event_id: Uuid,
        _start_counted: bool,
    ) -> Result<(), InboxError> {
        Ok(())
    }

    async fn clear_attempts(
        &self,
        _tx: &mut (),
        _consumer: &str,
        _event_id: Uuid,
    ) -> Result<(), InboxError> {
        Ok(())
    }

    async fn purge_older_than(
        &self,
        _consumer: &str,
        _age: Duration,
        _limit: usize,
    ) -> Result<u64, InboxError> {
        Ok(0)
    }
}
