//! A leased batch and its settlement in one fenced statement.

use std::collections::HashSet;

use sqlx::Row;
use tidings_core::{
    ClaimedBatch, LeaseToken, OutboxRecord, Outcome, SettleReport, Settlement, StoreError,
};
use tracing::{instrument, warn};
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;
use crate::store::micros;

/// Rows claimed under one lease. The claim is committed; settling writes
/// under the lease token, and a sweep may hand the rows to another relay
/// once the lease expires.
#[derive(Debug)]
pub struct PgBatch {
    store: PgOutboxStore,
    route: String,
    lease: LeaseToken,
    records: Vec<OutboxRecord>,
}

impl PgBatch {
    pub(crate) fn new(
        store: PgOutboxStore,
        route: String,
        lease: LeaseToken,
        records: Vec<OutboxRecord>,
    ) -> Self {
        Self {
            store,
            route,
            lease,
            records,
        }
    }

    /// The route the rows belong to.
    pub fn route(&self) -> &str {
        &self.route
    }
}

impl ClaimedBatch for PgBatch {
    fn lease(&self) -> LeaseToken {
        self.lease
    }

    fn records(&self) -> &[OutboxRecord] {
        &self.records
    }

    #[instrument(
        skip_all,
        fields(
            db.system = "postgresql",
            outbox.route = %self.route,
            outbox.lease = %self.lease.0,
            settlements = settlements.len(),
        ),
        err
    )]
    async fn settle(self, settlements: Vec<Settlement>) -> Result<SettleReport, StoreError> {
        let columns = OutcomeColumns::new(settlements);
        if columns.event_id.is_empty() {
            return Ok(SettleReport::default());
        }
        let inner = self.store.inner();
        let delete = self.store.delete_on_publish();
        let query = if columns.all_published() {
            // The common case, without the outcome join of the general
            // statement.
            let statement = match delete {
                true => inner.sql.settle_published.clone(),
                false => inner.sql.settle_published_kept.clone(),
            };
            sqlx::query(statement)
                .bind(&self.route)
                .bind(self.lease.0)
                .bind(&columns.event_id)
        } else {
            sqlx::query(inner.sql.settle.clone())
                .bind(&self.route)
                .bind(self.lease.0)
                .bind(&columns.event_id)
                .bind(&columns.outcome)
                .bind(&columns.delay_us)
                .bind(&columns.error)
                .bind(delete)
        };
        let rows = query.fetch_all(&inner.pool).await.map_err(store_error)?;
        let mut report = SettleReport::default();
        let mut settled = HashSet::with_capacity(rows.len());
        for row in rows {
            let event_id: Uuid = row.try_get("event_id").map_err(store_error)?;
            let outcome: &str = row.try_get("outcome").map_err(store_error)?;
            match outcome {
                PUBLISHED => report.published += 1,
                RETRY => report.rescheduled += 1,
                _ => report.failed += 1,
            }
            settled.insert(event_id);
        }
        report.lost = columns
            .event_id
            .into_iter()
            .filter(|id| !settled.contains(id))
            .collect();
        if !report.lost.is_empty() {
            warn!(lost = report.lost.len(), "lease lost; marks refused");
        }
        Ok(report)
    }
}

const PUBLISHED: &str = "published";
const RETRY: &str = "retry";
const FAILED: &str = "failed";

/// The settlements, one array per column, each event id once (the first
/// outcome given for it wins).
#[derive(Default)]
struct OutcomeColumns {
    event_id: Vec<Uuid>,
    outcome: Vec<&'static str>,
    delay_us: Vec<i64>,
    error: Vec<Option<String>>,
}

impl OutcomeColumns {
    /// Whether every row was published.
    fn all_published(&self) -> bool {
        self.outcome.iter().all(|kind| *kind == PUBLISHED)
    }

    fn new(settlements: Vec<Settlement>) -> Self {
        let mut seen = HashSet::with_capacity(settlements.len());
        let mut c = Self::default();
        for Settlement { event_id, outcome } in settlements {
            if !seen.insert(event_id) {
                continue;
            }
            let (kind, delay, error) = match outcome {
                Outcome::Published => (PUBLISHED, 0, None),
                Outcome::Retry { delay, error } => (RETRY, micros(delay), Some(error)),
                Outcome::Failed { reason } => (FAILED, 0, Some(reason)),
            };
            c.event_id.push(event_id);
            c.outcome.push(kind);
            c.delay_us.push(delay);
            c.error.push(error);
        }
        c
    }
}
