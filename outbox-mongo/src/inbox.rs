//! The consumer's side: the inbox, recorded in the handler's transaction.

use std::time::Duration;

use futures::TryStreamExt;
use mongodb::bson::Document;
use tidings_core::spec::validate_name;
use tidings_core::{InboxError, InboxMark, InboxStore};
use tracing::{debug, instrument};
use uuid::Uuid;

use crate::error::{CommitError, inbox_error, store_to_inbox};
use crate::filters;
use crate::schema::{int64, micros};
use crate::{MongoContext, MongoOutboxStore};

/// The inbox on MongoDB: `(consumer, event_id)` documents written in the
/// handler's own transaction, a [`MongoContext`], so the handler's writes,
/// the events it stages and the mark commit together.
///
/// Made by [`MongoOutboxStore::inbox`]; its unique index is created by
/// [`MongoOutboxStore::ensure_indexes`].
#[derive(Debug, Clone)]
pub struct MongoInboxStore {
    store: MongoOutboxStore,
}

impl MongoInboxStore {
    pub(crate) fn new(store: MongoOutboxStore) -> Self {
        Self { store }
    }

    /// The store whose client and collections this inbox uses.
    pub fn store(&self) -> &MongoOutboxStore {
        &self.store
    }
}

impl InboxStore for MongoInboxStore {
    type Tx = MongoContext;

    async fn begin(&self) -> Result<MongoContext, InboxError> {
        self.store.begin().await.map_err(store_to_inbox)
    }

    /// Duplicate keys and failed document validation anywhere in the
    /// error's chain: the same write of the same document fails the same
    /// way.
    fn is_permanent(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        std::iter::successors(Some(error), |e| e.source()).any(|e| {
            e.downcast_ref::<mongodb::error::Error>()
                .is_some_and(crate::error::never_succeeds)
        })
    }

    /// An upsert that only sets fields on insert: a mark committed before
    /// matches and changes nothing, so a duplicate raises no error and the
    /// transaction stays usable. A mark another transaction holds
    /// uncommitted is a write conflict ([`InboxError::Conflict`]); handling
    /// the delivery again finds it committed.
    #[instrument(
        skip_all,
        fields(db.system = "mongodb", messaging.consumer.group.name = consumer, messaging.message.id = %event_id),
        err
    )]
    async fn mark(
        &self,
        tx: &mut MongoContext,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<InboxMark, InboxError> {
        check_consumer(consumer)?;
        let now = micros(self.store.now());
        let result = self
            .store
            .inbox_collection()
            .update_one(
                filters::inbox_mark(consumer, event_id),
                filters::inbox_insert(now),
            )
            .upsert(true)
            .session(tx.session())
            .await
            .map_err(inbox_error)?;
        let mark = if result.upserted_id.is_some() {
            InboxMark::Fresh
        } else {
            InboxMark::Duplicate
        };
        debug!(?mark, "inbox mark");
        Ok(mark)
    }

    async fn commit(&self, tx: MongoContext) -> Result<(), InboxError> {
        tx.commit().await.map_err(|e| match e {
            CommitError::Store(e) => store_to_inbox(e),
            other => InboxError::Invalid(other.to_string()),
        })
    }

    async fn rollback(&self, tx: MongoContext) -> Result<(), InboxError> {
        tx.rollback().await.map_err(store_to_inbox)
    }

    #[instrument(
        skip_all,
        fields(db.system = "mongodb", messaging.consumer.group.name = consumer),
        err
    )]
    async fn purge_older_than(
        &self,
        consumer: &str,
        age: Duration,
        limit: usize,
    ) -> Result<u64, InboxError> {
        check_consumer(consumer)?;
        let Some(cutoff) = self.store.now().checked_sub(age) else {
            return Ok(0);
        };
        if limit == 0 {
            return Ok(0);
        }
        let inbox = self.store.inbox_collection();
        let filter = filters::inbox_older(consumer, micros(cutoff));
        let doomed: Vec<Document> = inbox
            .find(filter)
            .limit(int64(limit))
            .projection(filters::id_only())
            .await
            .map_err(inbox_error)?
            .try_collect()
            .await
            .map_err(inbox_error)?;
        let ids = doomed
            .into_iter()
            .filter_map(|mut d| d.remove("_id"))
            .collect();
        let purged = inbox
            .delete_many(filters::ids_in(ids))
            .await
            .map_err(inbox_error)?
            .deleted_count;
        Ok(purged)
    }
}

fn check_consumer(consumer: &str) -> Result<(), InboxError> {
    validate_name("consumer", consumer).map_err(|e| InboxError::Invalid(e.to_string()))
}
