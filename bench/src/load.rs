//! Filling an outbox before a drain: pending events staged through
//! tidings, published rows written in bulk.

use std::future::Future;

use sqlx::AssertSqlSafe;
use tidings_core::OutboxSpec;
use tidings_postgres::PgOutboxStore;
use uuid::Uuid;

use crate::env::outbox_table;
use crate::payload::Payload;

/// Events staged per transaction while loading.
const LOAD_CHUNK: usize = 500;

/// A store the scenarios stage into through tidings, whatever its
/// database.
pub(crate) trait Staging: Clone + Send + Sync + 'static {
    /// Stages `count` events of `spec`, their payloads numbered from
    /// `first`, in one transaction, commits it and returns their ids.
    fn commit_events(
        &self,
        spec: &'static OutboxSpec<Payload>,
        first: i64,
        count: usize,
    ) -> impl Future<Output = anyhow::Result<Vec<Uuid>>> + Send;
}

impl Staging for PgOutboxStore {
    async fn commit_events(
        &self,
        spec: &'static OutboxSpec<Payload>,
        first: i64,
        count: usize,
    ) -> anyhow::Result<Vec<Uuid>> {
        let mut ctx = self.begin().await?;
        let mut ids = Vec::with_capacity(count);
        for n in first..first + count as i64 {
            let staged = ctx.outbox().stage(spec, "order.placed", &Payload::new(n))?;
            ids.push(staged.envelope().event_id);
        }
        ctx.commit().await?;
        Ok(ids)
    }
}

/// Stages `count` events of `spec` in transactions of [`LOAD_CHUNK`].
pub(crate) async fn stage_pending(
    store: &impl Staging,
    spec: &'static OutboxSpec<Payload>,
    count: usize,
) -> anyhow::Result<()> {
    let mut n = 0;
    while n < count {
        let chunk = LOAD_CHUNK.min(count - n);
        store.commit_events(spec, n as i64, chunk).await?;
        n += chunk;
    }
    Ok(())
}

/// Writes `count` rows of `spec`'s route already published, as a table
/// keeping its history holds them.
pub(crate) async fn insert_published(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    count: usize,
) -> anyhow::Result<()> {
    let payload = serde_json::to_vec(&Payload::new(0))?;
    let sql = format!(
        "insert into {} (event_id, route, destination, event_type, payload, content_type, \
         occurred_at, status, attempts_started, attempts_finished, finished_at) \
         select gen_random_uuid(), $1, $2, 'order.placed', $3, 'application/json', now(), \
         'published', 1, 1, now() from generate_series(1, $4)",
        outbox_table(store)
    );
    sqlx::query(AssertSqlSafe(sql))
        .bind(spec.name())
        .bind(spec.route().destination.as_deref().unwrap_or_default())
        .bind(payload)
        .bind(count as i64)
        .execute(store.pool())
        .await?;
    Ok(())
}
