//! The raw limit of a drain: a bare `SKIP LOCKED` claim and a delete of
//! what was claimed, in plain SQL, on a table of the same shape.

use std::time::{Duration, Instant};

use sqlx::{AssertSqlSafe, Row};
use tidings_core::OutboxSpec;
use tidings_postgres::PgOutboxStore;
use uuid::Uuid;

use crate::env::outbox_table;
use crate::payload::Payload;

/// Claims and deletes batches of `batch_size` until the route is empty,
/// reading each claimed row as a hand-written relay would; returns the
/// rows moved and the time taken.
pub(crate) async fn drain(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    batch_size: usize,
) -> anyhow::Result<(usize, Duration)> {
    let table = outbox_table(store);
    let claim = format!(
        "with picked as (select id from {table} \
         where route = $1 and status = 'pending' and available_at <= now() \
         order by id + 0 limit {batch_size} for update skip locked) \
         update {table} as o set status = 'in_flight', lease_token = $2, \
         lease_expires_at = now() + interval '30 seconds' \
         from picked where o.id = picked.id \
         returning o.id, o.event_id, o.event_type, o.payload"
    );
    let mark = format!("delete from {table} where id = any($1) and lease_token = $2");
    let started = Instant::now();
    let mut moved = 0;
    loop {
        let lease = Uuid::new_v4();
        let rows = sqlx::query(AssertSqlSafe(claim.clone()))
            .bind(spec.name())
            .bind(lease)
            .fetch_all(store.pool())
            .await?;
        let claimed = rows.len();
        let mut ids = Vec::with_capacity(claimed);
        for row in &rows {
            let _message: (Uuid, String, Vec<u8>) = (
                row.try_get("event_id")?,
                row.try_get("event_type")?,
                row.try_get("payload")?,
            );
            ids.push(row.try_get::<i64, _>("id")?);
        }
        sqlx::query(AssertSqlSafe(mark.clone()))
            .bind(&ids)
            .bind(lease)
            .execute(store.pool())
            .await?;
        moved += ids.len();
        if claimed < batch_size {
            return Ok((moved, started.elapsed()));
        }
    }
}
