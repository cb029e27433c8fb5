//! Every index the store relies on, declared in one function, created by
//! [`MongoOutboxStore::ensure_indexes`] and checked by
//! [`MongoOutboxStore::verify`].

use mongodb::bson::{Bson, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};
use tidings_core::StoreError;
use tracing::{info, instrument};

use crate::MongoOutboxStore;
use crate::error::{is_namespace_exists, is_namespace_missing, store_error};
use crate::read::read_all;
use crate::schema::field;

/// Which of the store's collections an index belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Outbox,
    Inbox,
    Attempts,
    /// Every route ever staged, keyed by name: no index beyond `_id`, but
    /// made here, since staging writes to it inside transactions.
    Routes,
}

/// Every collection of the store.
const TARGETS: [Target; 4] = [
    Target::Outbox,
    Target::Inbox,
    Target::Attempts,
    Target::Routes,
];

/// One declared index.
#[derive(Debug, Clone)]
struct Declared {
    target: Target,
    name: &'static str,
    keys: Document,
    unique: bool,
}

/// The indexes, all of them.
fn declared() -> Vec<Declared> {
    let index = |target, name, keys, unique| Declared {
        target,
        name,
        keys,
        unique,
    };
    vec![
        // One document per event and route: staging an id twice fails.
        index(
            Target::Outbox,
            "tidings_route_event_id",
            doc! { field::ROUTE: 1, field::EVENT_ID: 1 },
            true,
        ),
        // Claims: a route's pending documents in creation order; sweeps,
        // per-key scans, stats and purges use its prefix.
        index(
            Target::Outbox,
            "tidings_claim",
            doc! { field::ROUTE: 1, field::STATUS: 1, field::SEQ: 1 },
            false,
        ),
        // Reading a claim back and fencing marks on its lease.
        index(
            Target::Outbox,
            "tidings_lease",
            doc! { field::LEASE: 1 },
            false,
        ),
        // One mark per consumer and event.
        index(
            Target::Inbox,
            "tidings_consumer_event_id",
            doc! { field::CONSUMER: 1, field::EVENT_ID: 1 },
            true,
        ),
        // Purging a consumer's old marks.
        index(
            Target::Inbox,
            "tidings_consumer_marked_at",
            doc! { field::CONSUMER: 1, field::MARKED_AT: 1 },
            false,
        ),
        // One attempt count per consumer and event.
        index(
            Target::Attempts,
            "tidings_attempts_consumer_event_id",
            doc! { field::CONSUMER: 1, field::EVENT_ID: 1 },
            true,
        ),
        // Purging a consumer's stale attempt counts.
        index(
            Target::Attempts,
            "tidings_attempts_consumer_touched_at",
            doc! { field::CONSUMER: 1, field::TOUCHED_AT: 1 },
            false,
        ),
    ]
}

impl MongoOutboxStore {
    /// Creates the collections' indexes where missing. Idempotent, and safe
    /// to run from several processes at once.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the database
    /// cannot be reached in time; [`StoreError::Backend`] for any other database
    /// error, such as an index of the same name with other keys. Indexes
    /// created before the failure stay.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn ensure_indexes(&self) -> Result<(), StoreError> {
        for target in TARGETS {
            let models: Vec<IndexModel> = declared()
                .into_iter()
                .filter(|d| d.target == target)
                .map(|d| {
                    let options = IndexOptions::builder()
                        .name(d.name.to_owned())
                        .unique(d.unique)
                        .build();
                    IndexModel::builder().keys(d.keys).options(options).build()
                })
                .collect();
            if models.is_empty() {
                self.create_collection(target).await?;
                continue;
            }
            self.collection(target)
                .create_indexes(models)
                .await
                .map_err(store_error)?;
        }
        info!(
            outbox = self.outbox().name(),
            inbox = self.inbox_collection().name(),
            attempts = self.inbox_attempts_collection().name(),
            "indexes ensured"
        );
        Ok(())
    }

    /// The startup check where an operator creates the indexes: every
    /// collection and index this build needs exists.
    ///
    /// # Errors
    ///
    /// [`StoreError::Schema`] naming every missing collection or index;
    /// [`StoreError::Unavailable`] or [`StoreError::Timeout`] when the
    /// database cannot be reached in time; [`StoreError::Backend`] for any
    /// other database error.
    #[instrument(skip_all, fields(db.system = "mongodb"), err)]
    pub async fn verify(&self) -> Result<(), StoreError> {
        let mut problems = Vec::new();
        for target in TARGETS {
            let collection = self.collection(target);
            let existing = match existing_indexes(collection).await {
                Ok(existing) => existing,
                Err(Missing::Collection) => {
                    problems.push(format!("collection {:?} does not exist", collection.name()));
                    continue;
                }
                Err(Missing::Unreadable(e)) => return Err(e),
            };
            for d in declared().into_iter().filter(|d| d.target == target) {
                let found = existing.iter().any(|(name, keys, unique)| {
                    name == d.name && same_keys(keys, &d.keys) && *unique == d.unique
                });
                if !found {
                    problems.push(format!(
                        "collection {:?} lacks index {} on {}{}",
                        collection.name(),
                        d.name,
                        d.keys,
                        if d.unique { " (unique)" } else { "" }
                    ));
                }
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(StoreError::Schema(format!(
            "{}; run MongoOutboxStore::ensure_indexes()",
            problems.join("; ")
        )))
    }

    fn collection(&self, target: Target) -> &Collection<Document> {
        match target {
            Target::Outbox => self.outbox(),
            Target::Inbox => self.inbox_collection(),
            Target::Attempts => self.inbox_attempts_collection(),
            Target::Routes => self.routes_collection(),
        }
    }

    /// Creates the collection of `target` unless it exists.
    async fn create_collection(&self, target: Target) -> Result<(), StoreError> {
        let name = self.collection(target).name();
        let existing = self
            .database()
            .list_collection_names()
            .await
            .map_err(store_error)?;
        if existing.iter().any(|n| n == name) {
            return Ok(());
        }
        match self.database().create_collection(name).await {
            Ok(()) => Ok(()),
            // Made meanwhile by another process.
            Err(e) if is_namespace_exists(&e) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }
}

/// Whether two key documents name the same fields in the same order and
/// directions, whatever numeric type the server reports them in.
fn same_keys(a: &Document, b: &Document) -> bool {
    let direction = |v: &Bson| match v {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        _ => None,
    };
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| {
            ka == kb && direction(va).is_some() && direction(va) == direction(vb)
        })
}

enum Missing {
    Collection,
    Unreadable(StoreError),
}

/// Name, keys and uniqueness of each index of a collection.
async fn existing_indexes(
    collection: &Collection<Document>,
) -> Result<Vec<(String, Document, bool)>, Missing> {
    let unreadable = |e: mongodb::error::Error| {
        if is_namespace_missing(&e) {
            Missing::Collection
        } else {
            Missing::Unreadable(store_error(e))
        }
    };
    let models: Vec<IndexModel> = read_all(collection.list_indexes())
        .await
        .map_err(unreadable)?;
    Ok(models
        .into_iter()
        .map(|m| {
            let options = m.options.unwrap_or_default();
            (
                options.name.unwrap_or_default(),
                m.keys,
                options.unique.unwrap_or(false),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_by_field_order_and_direction() {
        let declared = doc! { "route": 1, "seq": 1 };
        assert!(same_keys(&doc! { "route": 1_i64, "seq": 1.0 }, &declared));
        assert!(!same_keys(&doc! { "seq": 1, "route": 1 }, &declared));
        assert!(!same_keys(&doc! { "route": 1, "seq": -1 }, &declared));
        assert!(!same_keys(&doc! { "route": 1 }, &declared));
    }

    #[test]
    fn every_index_has_a_unique_name() {
        let all = declared();
        let names: std::collections::HashSet<_> = all.iter().map(|d| d.name).collect();
        assert_eq!(names.len(), all.len());
    }
}
