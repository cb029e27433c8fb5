use tidings_core::StoreError;
use tidings_postgres::{PgInboxStore, PgOutboxStore};

use super::AdminStore;

impl AdminStore for PgOutboxStore {
    type Inbox = PgInboxStore;

    fn inbox_store(&self) -> PgInboxStore {
        self.inbox()
    }

    async fn migrate_schema(&self) -> Result<String, StoreError> {
        let applied = self.migrate().await?;
        Ok(format!("applied {applied} migrations"))
    }

    async fn verify_schema(&self) -> Result<(), StoreError> {
        self.verify().await
    }
}
