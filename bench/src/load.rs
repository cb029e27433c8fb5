//! Filling an outbox before a drain: pending events staged through
//! tidings, published rows written in bulk.

use sqlx::AssertSqlSafe;
use tidings_core::OutboxSpec;
use tidings_postgres::PgOutboxStore;

use crate::env::outbox_table;
use crate::payload::Payload;

/// Events staged per transaction while loading.
const LOAD_CHUNK: usize = 500;

/// Stages `count` events of `spec` in transactions of [`LOAD_CHUNK`].
pub(crate) async fn stage_pending(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    count: usize,
) -> anyhow::Result<()> {
    let mut n = 0;
    while n < count {
        let mut ctx = store.begin().await?;
        for _ in 0..LOAD_CHUNK.min(count - n) {
            ctx.outbox()
                .stage(spec, "order.placed", &Payload::new(n as i64))?;
            n += 1;
        }
        ctx.commit().await?;
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
