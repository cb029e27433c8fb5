//! The raw limit of a drain: the best drain plain SQL can write, on a table
//! of the same shape. Each batch is one prepared statement in a transaction
//! of its own, deleting the oldest pending rows it can lock and returning
//! what a relay publishes:
//!
//! ```sql
//! delete from outbox where id in (
//!     select id from outbox where route = $1 and status = 'pending' and available_at <= now()
//!     order by id + 0 limit 500 for update skip locked)
//! returning event_id, destination, event_type, payload, content_type, headers::text, ordering_key
//! ```
//!
//! run on several connections at once. It keeps no record of the claim, so
//! a drain that dies between the delete and the publish loses its batch:
//! it is the floor of the store's work, not a relay.

use std::time::{Duration, Instant};

use futures::future::try_join_all;
use sqlx::{AssertSqlSafe, Row};
use tidings_core::OutboxSpec;
use tidings_postgres::PgOutboxStore;
use uuid::Uuid;

use crate::env::outbox_table;
use crate::payload::Payload;

/// What a relay reads of each row: event id, destination, type, payload,
/// content type, headers and ordering key.
type Message = (
    Uuid,
    String,
    String,
    Vec<u8>,
    String,
    Option<String>,
    Option<String>,
);

/// Deletes batches of `batch_size` on `connections` connections at once
/// until the route is empty, reading each row as a hand-written relay
/// would; returns the rows moved and the time taken.
pub(crate) async fn drain(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    batch_size: usize,
    connections: usize,
) -> anyhow::Result<(usize, Duration)> {
    let table = outbox_table(store);
    let delete = format!(
        "delete from {table} where id in (select id from {table} \
         where route = $1 and status = 'pending' and available_at <= now() \
         order by id + 0 limit {batch_size} for update skip locked) \
         returning event_id, destination, event_type, payload, content_type, \
         headers::text as headers, ordering_key"
    );
    let mut held = Vec::with_capacity(connections);
    for _ in 0..connections.max(1) {
        held.push(store.pool().acquire().await?);
    }
    let started = Instant::now();
    let drains = held.iter_mut().map(|conn| {
        let delete = &delete;
        async move {
            let mut moved = 0;
            loop {
                let rows = sqlx::query(AssertSqlSafe(delete.clone()))
                    .bind(spec.name())
                    .fetch_all(&mut **conn)
                    .await?;
                for row in &rows {
                    let _message: Message = (
                        row.try_get("event_id")?,
                        row.try_get("destination")?,
                        row.try_get("event_type")?,
                        row.try_get("payload")?,
                        row.try_get("content_type")?,
                        row.try_get("headers")?,
                        row.try_get("ordering_key")?,
                    );
                }
                moved += rows.len();
                if rows.len() < batch_size {
                    return anyhow::Ok(moved);
                }
            }
        }
    });
    let moved = try_join_all(drains).await?.into_iter().sum();
    Ok((moved, started.elapsed()))
}
