//! Staging into the MongoDB store, for the scenarios that load it.

use futures::FutureExt;
use tidings_core::OutboxSpec;
use tidings_mongo::MongoOutboxStore;
use uuid::Uuid;

use crate::load::Staging;
use crate::payload::Payload;

impl Staging for MongoOutboxStore {
    /// Through [`MongoOutboxStore::transaction`], which runs the
    /// transaction again after a transient error.
    async fn commit_events(
        &self,
        spec: &'static OutboxSpec<Payload>,
        first: i64,
        count: usize,
    ) -> anyhow::Result<Vec<Uuid>> {
        let ids = self
            .transaction(|ctx| {
                let ids: Result<Vec<_>, _> = (first..first + count as i64)
                    .map(|n| {
                        let staged = ctx.outbox().stage(spec, "order.placed", &Payload::new(n));
                        staged.map(|s| s.envelope().event_id)
                    })
                    .collect();
                async move { Ok(ids?) }.boxed()
            })
            .await?;
        Ok(ids)
    }
}
