//! The store conformance suite on PostgreSQL, with each retention. Every
//! case runs in a schema of its own.

mod support;

use tidings_core::StagedEvent;
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_testing::store::StoreHarness;

struct Pg(Retention);

impl StoreHarness for Pg {
    type Store = PgOutboxStore;

    async fn store(&self) -> PgOutboxStore {
        support::store(self.0).await
    }

    async fn commit(&self, store: &PgOutboxStore, events: Vec<StagedEvent>) {
        support::commit(store, events).await;
    }
}

mod delete_on_publish {
    use super::*;
    tidings_testing::store_conformance!(Pg(Retention::Delete));
}

mod keep_published {
    use super::*;
    tidings_testing::store_conformance!(Pg(Retention::Keep));
}
