//! Locked claims: the rows are locked in a transaction that stays open
//! while they are published, then settled and committed in it.
//!
//! The claim rewrites nothing, so each row costs one write (its settle)
//! instead of two (the claim's rewrite, which adds index entries, and the
//! settle); a record per batch ([`records`]) keeps count of claims
//! that die. The open transaction fences the batch: no other claim
//! can take a locked row, and if the relay dies, or sits idle in the
//! transaction for longer than its lease, PostgreSQL rolls back and the
//! rows are claimable again, untouched.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::Duration;

use tidings_core::port::error_chain;
use tidings_core::{ClaimCursor, ClaimRequest, LeaseToken, OutboxRecord, SettleReport, StoreError};
use tokio::task::JoinHandle;
use tracing::warn;
use uuid::Uuid;

use crate::claim::connections::ClaimConnection;
use crate::claim::outcomes::{OutcomeColumns, Settled};
use crate::claim::pooled::PooledClaim;
use crate::claim::row::into_records;
use crate::claim::statements::ClaimFrom;
use crate::claim::{own, pooled, records};
use crate::{ClaimMode, PgOutboxStore};

/// The open transaction of a locked batch, on a claim connection, its
/// rows' ids and its claim record.
pub(crate) struct LockedRows {
    /// In the batch's transaction. Dropped unsettled, it is closed, or
    /// rolled back on its way back to the pool, and the rows are released.
    connection: Held,
    /// Row id by event id, for the rows this transaction locked.
    ids: HashMap<Uuid, i64>,
    token: Uuid,
    /// The claim's lease, which bounds how long the transaction may sit
    /// idle: also that of the next claim's transaction, where the settle
    /// begins it ahead.
    lease: Duration,
    /// The claim record being written beside the publish, off the claim's
    /// path; the settle waits for it, so it never deletes the record
    /// before the record exists.
    record: JoinHandle<Result<(), StoreError>>,
}

impl fmt::Debug for LockedRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockedRows")
            .field("rows", &self.ids.len())
            .finish_non_exhaustive()
    }
}

/// Where a locked batch's transaction runs.
#[derive(Debug)]
enum Held {
    /// On a connection of the store's own.
    Own(ClaimConnection),
    /// On one of the pool's, behind a transaction pooler.
    Pooled(PooledClaim),
}

impl Held {
    /// Ends a claim that took no rows, keeping an own connection for the
    /// next one.
    async fn release(self, store: &PgOutboxStore) -> Result<(), StoreError> {
        match self {
            Held::Own(connection) => own::release(store, connection).await,
            Held::Pooled(claim) => claim.rollback().await,
        }
    }
}

/// A locked claim: the lease token naming it, the records claimed, in the
/// route's order, the rows' locks, or none where no row was claimed, and
/// where a claim going on from it may start.
pub(crate) struct Claimed {
    pub(crate) token: LeaseToken,
    pub(crate) records: Vec<OutboxRecord>,
    pub(crate) locks: Option<LockedRows>,
    pub(crate) cursor: Option<ClaimCursor>,
}

/// Claims by locking rows in a transaction of their own, which may sit idle
/// for at most the lease: on one of the store's own connections, or
/// behind a transaction pooler on one of the pool's.
pub(crate) async fn claim(
    store: &PgOutboxStore,
    request: ClaimRequest<'_>,
) -> Result<Claimed, StoreError> {
    let route = request.route;
    let cursors = ClaimCursor::fits(route);
    let after = request.after.map(|cursor| cursor.0);
    let from = ClaimFrom::of(route, ClaimMode::Locked, after, &store.inner().keys);
    let (held, rows, unreadable) = if store.persistent() {
        let (connection, rows, unreadable) = own::claim(store, &request, from.clone()).await?;
        (Held::Own(connection), rows, unreadable)
    } else {
        let (claim, rows, unreadable) = pooled::claim(store, &request, from.clone()).await?;
        (Held::Pooled(claim), rows, unreadable)
    };
    if !unreadable.is_empty() {
        // Rolled back first: the rows to fail are this claim's locks.
        held.release(store).await?;
        return Err(unreadable.set_aside(store, &route.name, None).await);
    }
    // The rows come in id order, so the last is the furthest on.
    let cursor = rows.last().filter(|_| cursors).map(|r| ClaimCursor(r.id));
    let token = LeaseToken::new();
    let locks = if rows.is_empty() {
        held.release(store).await?;
        None
    } else {
        let row_ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let (recorder, name, lease) = (store.clone(), route.name.clone(), request.lease);
        let record = tokio::spawn(async move {
            records::record(&recorder, token.0, &name, &row_ids, lease).await
        });
        let ids = rows
            .iter()
            .map(|r| (r.record.envelope.event_id, r.id))
            .collect();
        Some(LockedRows {
            connection: held,
            ids,
            token: token.0,
            lease: request.lease,
            record,
        })
    };
    let records = into_records(rows, route.hlc_ordering);
    from.advance(&store.inner().keys, route, &records, request.limit);
    Ok(Claimed {
        token,
        records,
        locks,
        cursor,
    })
}

impl LockedRows {
    /// Writes the outcomes, deletes the claim's record and commits,
    /// releasing the locks. Outcomes for rows this batch does not hold
    /// change nothing and come back as lost; rows left without an outcome
    /// are released untouched.
    pub(crate) async fn settle(
        mut self,
        store: &PgOutboxStore,
        mut columns: OutcomeColumns,
    ) -> Result<SettleReport, StoreError> {
        let foreign = columns.retain(|id| self.ids.contains_key(id));
        self.recorded().await;
        let ids: Vec<i64> = columns.event_id.iter().map(|id| self.ids[id]).collect();
        let settled = match self.connection {
            Held::Own(connection) => {
                own::settle(store, connection, &columns, &ids, self.token, self.lease).await?
            }
            Held::Pooled(claim) => claim.settle(store, &columns, &ids, self.token).await?,
        };
        let mut report = match settled {
            Settled::Rows(rows) => columns.report(rows)?,
            Settled::Published(settled) => {
                let missed = missed_events(&columns.event_id, &ids, settled);
                columns.report_published_but(missed)
            }
        };
        report.lost.extend(foreign);
        Ok(report)
    }

    /// Waits for the claim record to be written. A record that could not
    /// be written only means a crash of this claim would have gone
    /// uncounted, so the settle goes on.
    async fn recorded(&mut self) {
        let written = match (&mut self.record).await {
            Ok(written) => written,
            Err(join) => Err(StoreError::Backend(join.into())),
        };
        if let Err(error) = written {
            warn!(error = %error_chain(&error), "locked claim not recorded; its crash would not have been counted");
        }
    }
}

/// The events an all-published settle missed: none where it settled
/// every row, otherwise those of `events` (row ids `ids`, in the same
/// order) whose row id is not among the `settled` ones.
fn missed_events(events: &[Uuid], ids: &[i64], settled: Option<Vec<i64>>) -> Vec<Uuid> {
    let Some(settled) = settled else {
        return Vec::new();
    };
    let settled: HashSet<i64> = settled.into_iter().collect();
    let rows = events.iter().zip(ids);
    rows.filter(|(_, id)| !settled.contains(id))
        .map(|(event, _)| *event)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settle_that_sent_back_its_rows_missed_the_others() {
        let events = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
        let ids = [7, 8, 12];
        assert!(missed_events(&events, &ids, None).is_empty());
        assert_eq!(missed_events(&events, &ids, Some(vec![7, 12])), [events[1]]);
        assert_eq!(missed_events(&events, &ids, Some(Vec::new())), events);
    }
}
