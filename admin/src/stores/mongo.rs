use tidings_core::StoreError;
use tidings_mongo::{MongoInboxStore, MongoOutboxStore};

use super::AdminStore;

impl AdminStore for MongoOutboxStore {
    type Inbox = MongoInboxStore;

    fn inbox_store(&self) -> MongoInboxStore {
        self.inbox()
    }

    async fn migrate_schema(&self) -> Result<String, StoreError> {
        self.ensure_indexes().await?;
        Ok("indexes in place".to_owned())
    }

    async fn verify_schema(&self) -> Result<(), StoreError> {
        self.verify().await
    }
}
