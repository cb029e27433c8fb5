//! The consumer's side: the inbox, recorded in the handler's transaction.

use std::time::Duration;

use mongodb::Collection;
use mongodb::bson::Document;
use mongodb::options::ReturnDocument;
use tidings_core::port::caused_by;
use tidings_core::{
    Attempts, CommitFailure, ConsumerName, InboxAttempts, InboxError, InboxKey, InboxMark,
    InboxPurge, InboxStore, IsolationLevel,
};
use tracing::debug;

use crate::error::{inbox_error, is_duplicate_key};
use crate::filters;
use crate::read::read_ids;
use crate::schema::{count, field, int64, micros};
use crate::{MongoContext, MongoOutboxStore};

/// The inbox on MongoDB: `(consumer, event_id)` documents written in the
/// handler's own transaction, a [`MongoContext`], so the handler's writes,
/// the events it stages and the mark commit together.
///
/// Handler attempts that have not committed are counted in a collection
/// beside it, `<inbox collection>_attempts`: a start in a write of its own
/// (so it outlives the handler's process), the count deleted in the
/// handler's transaction when it commits. Only redeliveries and failures
/// write there; see [`InboxAttempts`].
///
/// Made by [`MongoOutboxStore::inbox`]; its unique indexes are created by
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
        self.store.begin().await.map_err(InboxError::from)
    }

    /// A transaction never reads another's uncommitted writes, and
    /// concurrent writes of one document conflict: read committed.
    async fn begin_at(&self, level: IsolationLevel) -> Result<MongoContext, InboxError> {
        match self.offers_isolation(level) {
            true => self.begin().await,
            false => Err(InboxError::not_offered(level)),
        }
    }

    fn offers_isolation(&self, level: IsolationLevel) -> bool {
        level == IsolationLevel::ReadCommitted
    }

    /// Duplicate keys and failed document validation anywhere in the
    /// error's chain: the same write of the same document fails the same
    /// way.
    fn is_permanent(&self, error: &(dyn std::error::Error + 'static)) -> bool {
        caused_by(error, crate::error::never_succeeds)
    }

    /// An upsert that only sets fields on insert: a mark committed before
    /// matches and changes nothing, so a duplicate raises no error and the
    /// transaction stays usable. A mark another transaction holds
    /// uncommitted is a write conflict ([`InboxError::Conflict`]); handling
    /// the delivery again finds it committed.
    async fn mark(
        &self,
        tx: &mut MongoContext,
        key: InboxKey<'_>,
    ) -> Result<InboxMark, InboxError> {
        let now = micros(self.store.now());
        let result = self
            .store
            .inbox_collection()
            .update_one(by_key(key), filters::inbox_insert(now))
            .upsert(true)
            .session(tx.session())
            .await
            .map_err(inbox_error)?;
        let mark = InboxMark::inserted(result.upserted_id.is_some(), ());
        debug!(?mark, "inbox mark");
        Ok(mark)
    }

    async fn commit(&self, tx: MongoContext) -> Result<(), InboxError> {
        tx.commit().await.map_err(CommitFailure::into_inbox_error)
    }

    async fn rollback(&self, tx: MongoContext) -> Result<(), InboxError> {
        tx.rollback().await.map_err(InboxError::from)
    }
}

impl InboxAttempts for MongoInboxStore {
    async fn start_attempt(&self, key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        let attempts = self.count_attempt(key, 1, 0).await?;
        debug!(?attempts, "attempt started");
        Ok(Some(attempts))
    }

    async fn attempts(&self, key: InboxKey<'_>) -> Result<Option<Attempts>, InboxError> {
        let document = self
            .store
            .inbox_attempts_collection()
            .find_one(by_key(key))
            .await
            .map_err(inbox_error)?
            .unwrap_or_default();
        Ok(Some(stored_attempts(&document)))
    }

    async fn finish_attempt(
        &self,
        key: InboxKey<'_>,
        start_counted: bool,
    ) -> Result<(), InboxError> {
        self.count_attempt(key, i32::from(!start_counted), 1)
            .await?;
        Ok(())
    }

    async fn clear_attempts(
        &self,
        tx: &mut MongoContext,
        key: InboxKey<'_>,
    ) -> Result<(), InboxError> {
        self.store
            .inbox_attempts_collection()
            .delete_one(by_key(key))
            .session(tx.session())
            .await
            .map_err(inbox_error)?;
        Ok(())
    }
}

impl InboxPurge for MongoInboxStore {
    async fn purge_older_than(
        &self,
        consumer: &ConsumerName,
        age: Duration,
        limit: usize,
    ) -> Result<u64, InboxError> {
        let Some(cutoff) = self.store.now().checked_sub(age) else {
            return Ok(0);
        };
        if limit == 0 {
            return Ok(0);
        }
        let (consumer, cutoff) = (consumer.as_str(), micros(cutoff));
        let marks = purge(
            self.store.inbox_collection(),
            filters::inbox_older(consumer, cutoff),
            limit,
        )
        .await?;
        let attempts = purge(
            self.store.inbox_attempts_collection(),
            filters::attempts_older(consumer, cutoff),
            limit,
        )
        .await?;
        Ok(marks + attempts)
    }
}

impl MongoInboxStore {
    /// Adds to an event's attempt count outside any transaction; returns
    /// the new count. Two first counts racing on one event can both try to
    /// insert it; the loser finds it on its second try.
    async fn count_attempt(
        &self,
        key: InboxKey<'_>,
        started: i32,
        finished: i32,
    ) -> Result<Attempts, InboxError> {
        let collection = self.store.inbox_attempts_collection();
        let mut tries = 0;
        let document = loop {
            tries += 1;
            let update = filters::attempt_count(started, finished, micros(self.store.now()));
            let result = collection
                .find_one_and_update(by_key(key), update)
                .upsert(true)
                .return_document(ReturnDocument::After)
                .await;
            match result {
                Ok(document) => break document.unwrap_or_default(),
                Err(e) if tries < 2 && is_duplicate_key(&e) => continue,
                Err(e) => return Err(inbox_error(e)),
            }
        };
        Ok(stored_attempts(&document))
    }
}

/// The filter of a mark or an attempt count.
fn by_key(key: InboxKey<'_>) -> Document {
    filters::inbox_key(key.consumer(), key.event_id())
}

/// The counts an attempts document holds; none where it holds none.
fn stored_attempts(document: &Document) -> Attempts {
    Attempts {
        started: stored_count(document, field::ATTEMPTS_STARTED),
        finished: stored_count(document, field::ATTEMPTS_FINISHED),
    }
}

/// A count as stored; none where it is not a count of attempts.
fn stored_count(document: &Document, name: &str) -> u32 {
    u32::try_from(count(document.get(name))).unwrap_or_default()
}

/// Deletes up to `limit` documents matching `filter`; returns how many went.
async fn purge(
    collection: &Collection<Document>,
    filter: Document,
    limit: usize,
) -> Result<u64, InboxError> {
    let ids = read_ids(collection.find(filter).limit(int64(limit)))
        .await
        .map_err(inbox_error)?;
    let purged = collection
        .delete_many(filters::ids_in(ids))
        .await
        .map_err(inbox_error)?
        .deleted_count;
    Ok(purged)
}
