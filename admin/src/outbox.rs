//! The store operations and their safety rules.

use std::time::Duration;

use tidings_core::lifecycle::purge_in_batches;
use tidings_core::{FailedFilter, FailedRow, InboxPurge, PurgeRequest, Requeue};
use tracing::info;
use uuid::Uuid;

use crate::AdminError;
use crate::inbox::consumer_name;
use crate::stores::AdminStore;
use crate::views::{ConsumerStatus, PurgeReport, RouteStatus, Status};

/// The operations on one store. Every operation that names a route or a
/// consumer first checks that the store knows it, so a typo is an error
/// rather than a silent "0 rows".
///
/// ```no_run
/// # #[cfg(feature = "postgres")]
/// # async fn demo(pool: tidings_postgres::sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
/// use tidings_admin::Admin;
/// use tidings_core::FailedFilter;
/// use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
///
/// let admin = Admin::new(PgOutboxStore::new(pool, PgOutboxOptions::new())?);
/// for route in admin.status().await?.routes {
///     println!("{}: {} pending, {} failed", route.route, route.pending, route.failed);
/// }
/// let filter = FailedFilter { event_type: Some("order.placed".into()), ..Default::default() };
/// let requeued = admin.requeue("order-events", &filter, false).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Admin<S> {
    store: S,
}

impl<S: AdminStore> Admin<S> {
    /// The operations on `store`.
    pub fn new(store: S) -> Self {
        Self { store }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Brings the schema (tables or indexes) up to date; says what it did.
    ///
    /// # Errors
    ///
    /// [`AdminError::Store`] when the schema cannot be brought up to date: a
    /// schema problem naming a table or index that clashes with the store's
    /// names, or the database unavailable.
    pub async fn migrate(&self) -> Result<String, AdminError> {
        Ok(self.store.migrate_schema().await?)
    }

    /// Checks the schema without changing it.
    ///
    /// # Errors
    ///
    /// [`AdminError::Store`] with a schema problem naming what is missing.
    pub async fn verify(&self) -> Result<(), AdminError> {
        Ok(self.store.verify_schema().await?)
    }

    /// Every route with rows, in name order.
    ///
    /// # Errors
    ///
    /// [`AdminError::Store`] when the store cannot be read.
    pub async fn routes(&self) -> Result<Vec<String>, AdminError> {
        Ok(self.store.routes().await?)
    }

    /// Every route's backlog and every consumer's inbox.
    ///
    /// # Errors
    ///
    /// [`AdminError::Store`] when the store cannot be read.
    pub async fn status(&self) -> Result<Status, AdminError> {
        let routes = self.routes_status().await?;
        let consumers = self.store.consumers().await?;
        Ok(Status {
            routes,
            consumers: consumers.into_iter().map(ConsumerStatus::from).collect(),
        })
    }

    /// Every route's backlog, without the inbox: what a stored inbox's
    /// table shows, whose inbox table may not exist.
    pub(crate) async fn routes_status(&self) -> Result<Vec<RouteStatus>, AdminError> {
        let mut routes = Vec::new();
        for route in self.store.routes().await? {
            let stats = self.store.stats(&route).await?;
            routes.push(RouteStatus::new(route, stats));
        }
        Ok(routes)
    }

    /// One route's backlog.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownRoute`] when the store has no row of `route`.
    pub async fn route_status(&self, route: &str) -> Result<RouteStatus, AdminError> {
        self.check_route(route).await?;
        Ok(RouteStatus::new(route, self.store.stats(route).await?))
    }

    /// Failed rows of `route` matching `filter`, oldest failure first.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownRoute`] when the store has no row of `route`;
    /// [`AdminError::Store`] when the store cannot be read.
    pub async fn failed(
        &self,
        route: &str,
        filter: &FailedFilter,
    ) -> Result<Vec<FailedRow>, AdminError> {
        self.check_route(route).await?;
        Ok(self.store.failed(route, filter).await?)
    }

    /// One failed row.
    ///
    /// # Errors
    ///
    /// [`AdminError::NotFound`] when `route` has no failed row `id`.
    pub async fn show(&self, route: &str, id: Uuid) -> Result<FailedRow, AdminError> {
        let filter = FailedFilter {
            ids: Some(vec![id]),
            limit: 1,
            ..FailedFilter::default()
        };
        let mut rows = self.failed(route, &filter).await?;
        rows.pop().ok_or_else(|| AdminError::NotFound {
            route: route.to_owned(),
            id,
        })
    }

    /// Moves the failed rows of `route` matching `filter` (at most its
    /// limit) back to pending with fresh attempt counters; returns how many
    /// moved or, dry, would move.
    ///
    /// # Errors
    ///
    /// [`AdminError::NotFound`] when the filter names ids and one of them is
    /// not a failed row of the route: nothing is requeued then.
    pub async fn requeue(
        &self,
        route: &str,
        filter: &FailedFilter,
        dry_run: bool,
    ) -> Result<u64, AdminError> {
        let rows = self.failed(route, filter).await?;
        if let Some(ids) = &filter.ids
            && let Some(id) = ids
                .iter()
                .find(|id| !rows.iter().any(|r| r.event_id == **id))
        {
            return Err(AdminError::NotFound {
                route: route.to_owned(),
                id: *id,
            });
        }
        if dry_run || rows.is_empty() {
            return Ok(rows.len() as u64);
        }
        let ids = rows.iter().map(|r| r.event_id).collect();
        let requeued = self.store.requeue_failed(route, Requeue::Ids(ids)).await?;
        info!(outbox.route = route, requeued, "failed rows requeued");
        Ok(requeued)
    }

    /// The failed rows of `route` named by `ids`, after checking that each
    /// one is a failed row of the route: what a requeue or delete of those
    /// ids takes, read once, so a dry run shows exactly that.
    ///
    /// # Errors
    ///
    /// [`AdminError::Invalid`] when `ids` is empty;
    /// [`AdminError::NotFound`] naming the first id that is not a failed
    /// row of the route.
    pub async fn selected(&self, route: &str, ids: &[Uuid]) -> Result<Vec<FailedRow>, AdminError> {
        if ids.is_empty() {
            return Err(AdminError::Invalid(
                "name at least one failed row by its event id".into(),
            ));
        }
        let filter = FailedFilter {
            ids: Some(ids.to_vec()),
            limit: ids.len(),
            ..FailedFilter::default()
        };
        let rows = self.failed(route, &filter).await?;
        match ids
            .iter()
            .find(|id| !rows.iter().any(|r| r.event_id == **id))
        {
            Some(id) => Err(AdminError::NotFound {
                route: route.to_owned(),
                id: *id,
            }),
            None => Ok(rows),
        }
    }

    /// Deletes the failed rows of `route` named by `ids`, after
    /// [`selected`](Self::selected) found every one; returns how many went
    /// or, dry, would go. A deleted row is gone for good: its event is
    /// never published.
    ///
    /// # Errors
    ///
    /// As [`selected`](Self::selected): nothing is deleted when one id is
    /// not a failed row of the route.
    pub async fn delete_failed(
        &self,
        route: &str,
        ids: &[Uuid],
        dry_run: bool,
    ) -> Result<u64, AdminError> {
        let rows = self.selected(route, ids).await?;
        if dry_run {
            return Ok(rows.len() as u64);
        }
        let ids: Vec<Uuid> = rows.iter().map(|r| r.event_id).collect();
        let deleted = self.store.delete_failed(route, &ids).await?;
        info!(outbox.route = route, deleted, "failed rows deleted");
        Ok(deleted)
    }

    /// Deletes finished rows of `route` in batches of `request.limit`,
    /// calling `progress(deleted, matched)` after each; dry, only counts
    /// them.
    ///
    /// # Errors
    ///
    /// [`AdminError::Invalid`] when `request.limit` is 0;
    /// [`AdminError::UnknownRoute`] when the store has no row of `route`;
    /// [`AdminError::Store`] when a count or a delete fails, leaving the rows
    /// deleted before it deleted.
    pub async fn purge(
        &self,
        route: &str,
        request: PurgeRequest,
        dry_run: bool,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<PurgeReport, AdminError> {
        if request.limit == 0 {
            return Err(AdminError::Invalid(
                "the purge batch must be at least 1".into(),
            ));
        }
        self.check_route(route).await?;
        let matched = self.store.count_purgeable(route, request).await?;
        let mut deleted = 0;
        if !dry_run {
            loop {
                let n = self.store.purge(route, request).await?;
                deleted += n;
                progress(deleted, matched.max(deleted));
                if n < request.limit as u64 {
                    break;
                }
            }
            info!(outbox.route = route, deleted, "finished rows purged");
        }
        Ok(PurgeReport {
            matched,
            deleted,
            dry_run,
        })
    }

    /// Deletes the inbox marks of `consumer` older than `older_than`, in
    /// batches of `batch`; returns how many went. A mark deleted is an
    /// event the consumer would handle again if it were redelivered, so
    /// keep `older_than` well above the longest redelivery.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownConsumer`] when the inbox has no mark of it.
    pub async fn purge_inbox(
        &self,
        consumer: &str,
        older_than: Duration,
        batch: usize,
    ) -> Result<u64, AdminError> {
        if batch == 0 {
            return Err(AdminError::Invalid(
                "the purge batch must be at least 1".into(),
            ));
        }
        let known: Vec<String> = self
            .store
            .consumers()
            .await?
            .into_iter()
            .map(|c| c.consumer)
            .collect();
        if !known.iter().any(|c| c == consumer) {
            return Err(AdminError::UnknownConsumer {
                consumer: consumer.to_owned(),
                known,
            });
        }
        let (inbox, consumer) = (self.store.inbox_store(), consumer_name(consumer)?);
        let purge = |limit| inbox.purge_older_than(&consumer, older_than, limit);
        Ok(purge_in_batches(batch, purge).await?)
    }

    async fn check_route(&self, route: &str) -> Result<(), AdminError> {
        let known = self.store.routes().await?;
        if known.iter().any(|r| r == route) {
            Ok(())
        } else {
            Err(AdminError::UnknownRoute {
                route: route.to_owned(),
                known,
            })
        }
    }
}
