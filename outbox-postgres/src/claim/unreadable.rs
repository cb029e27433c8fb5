//! Rows a claim cannot read back, say headers written by hand that are not
//! a JSON object of strings: failed in place with the reason, kept for an
//! operator to repair and requeue, and reported as
//! [`StoreError::Corrupt`] naming the first. The rest of the claim goes
//! back to pending as if never claimed, so the next claim goes on past
//! them instead of stalling the route on a row no relay can read.

use tidings_core::{LeaseToken, StoreError};
use tracing::error;
use uuid::Uuid;

use crate::PgOutboxStore;
use crate::error::store_error;

/// The rows of one claim that could not be read: event id and why.
#[derive(Debug, Default)]
pub(crate) struct Unreadable(Vec<(Uuid, String)>);

impl Unreadable {
    /// Adds a row that could not be read.
    pub(crate) fn push(&mut self, event_id: Uuid, reason: String) {
        self.0.push((event_id, reason));
    }

    /// The first row that could not be read, with why.
    pub(crate) fn first(&self) -> Option<(Uuid, String)> {
        self.0.first().cloned()
    }

    /// Whether every row could be read.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Fails the rows of `route` that could not be read and, for a leased
    /// claim (`lease`), returns its other rows to pending; a locked claim
    /// must have rolled back first. Returns the error to report: the
    /// first row's, or the failure to set the rows aside.
    pub(crate) async fn set_aside(
        self,
        store: &PgOutboxStore,
        route: &str,
        lease: Option<LeaseToken>,
    ) -> StoreError {
        let (ids, reasons): (Vec<Uuid>, Vec<String>) = self.0.into_iter().unzip();
        for (event_id, reason) in ids.iter().zip(&reasons) {
            error!(outbox.route = route, messaging.message.id = %event_id, %reason, "unreadable outbox row: failed and kept for repair");
        }
        let statement = store.inner().sql.set_aside.clone();
        let set = sqlx::query(statement)
            .persistent(store.persistent())
            .bind(route)
            .bind(lease.map(|lease| lease.0))
            .bind(&ids)
            .bind(&reasons)
            .execute(&store.inner().pool)
            .await;
        match (set, ids.first(), reasons.into_iter().next()) {
            (Err(e), _, _) => store_error(e),
            (Ok(_), Some(event_id), Some(reason)) => StoreError::Corrupt {
                event_id: *event_id,
                reason,
            },
            (Ok(_), _, _) => StoreError::Corrupt {
                event_id: Uuid::nil(),
                reason: "unreadable row".into(),
            },
        }
    }
}
