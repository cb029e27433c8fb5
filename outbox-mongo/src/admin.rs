//! The operator's side: routes, failed documents, purge counts and the
//! inbox per consumer.

use std::time::Duration;

use mongodb::bson::{Bson, Document};
use tidings_core::{ConsumerStats, FailedFilter, FailedRow, OutboxAdmin, PurgeRequest, StoreError};
use tracing::instrument;
use uuid::Uuid;

use crate::MongoOutboxStore;
use crate::document::failed_row;
use crate::error::store_error;
use crate::filters;
use crate::read::read_all;
use crate::schema::{age, count, field, int64, micros};

impl OutboxAdmin for MongoOutboxStore {
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    async fn routes(&self) -> Result<Vec<String>, StoreError> {
        let values = self
            .outbox()
            .distinct(field::ROUTE, Document::new())
            .await
            .map_err(store_error)?;
        let recorded = self
            .routes_collection()
            .distinct("_id", Document::new())
            .await
            .map_err(store_error)?;
        let mut routes: Vec<String> = values
            .into_iter()
            .chain(recorded)
            .filter_map(|value| match value {
                Bson::String(route) => Some(route),
                _ => None,
            })
            .collect();
        routes.sort();
        routes.dedup();
        Ok(routes)
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn failed(
        &self,
        route: &str,
        filter: &FailedFilter,
    ) -> Result<Vec<FailedRow>, StoreError> {
        let now = micros(self.now());
        let cutoff = now.saturating_sub(duration_micros(filter.older_than.unwrap_or_default()));
        let documents: Vec<Document> = read_all(
            self.outbox()
                .find(filters::failed_matching(route, filter, cutoff))
                .sort(filters::failure_order())
                .limit(int64(filter.limit)),
        )
        .await
        .map_err(store_error)?;
        documents.iter().map(|d| failed_row(d, now)).collect()
    }

    #[instrument(skip_all, fields(db.system = "mongodb", outbox.route = route), err)]
    async fn count_purgeable(&self, route: &str, request: PurgeRequest) -> Result<u64, StoreError> {
        let Some(filter) = self.purgeable(route, request) else {
            return Ok(0);
        };
        self.outbox()
            .count_documents(filter)
            .await
            .map_err(store_error)
    }

    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    async fn consumers(&self) -> Result<Vec<ConsumerStats>, StoreError> {
        let groups: Vec<Document> = read_all(
            self.inbox_collection()
                .aggregate(filters::consumers_pipeline()),
        )
        .await
        .map_err(store_error)?;
        let now = micros(self.now());
        Ok(groups
            .into_iter()
            .map(|group| ConsumerStats {
                consumer: group.get_str("_id").unwrap_or_default().to_owned(),
                marks: count(group.get("marks")),
                oldest_mark_age: group.get_i64("oldest").ok().map(|at| age(now, at)),
            })
            .collect())
    }

    #[instrument(skip_all, fields(db.system = "mongodb", messaging.consumer.group.name = consumer), err)]
    async fn mark_age(
        &self,
        consumer: &str,
        event_id: Uuid,
    ) -> Result<Option<Duration>, StoreError> {
        let mark = self
            .inbox_collection()
            .find_one(filters::inbox_key(consumer, event_id))
            .await
            .map_err(store_error)?;
        let now = micros(self.now());
        Ok(mark.map(|mark| age(now, mark.get_i64(field::MARKED_AT).unwrap_or(now))))
    }
}

fn duration_micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}
