//! The inbox's filter and update documents: marks, and the attempt
//! counts kept beside them.

use mongodb::bson::{Document, doc};
use uuid::Uuid;

use crate::schema::{field, uuid};

/// Counts the inbox's marks per consumer, with each one's oldest.
pub(crate) fn consumers_pipeline() -> Vec<Document> {
    vec![
        doc! { "$group": {
            "_id": format!("${}", field::CONSUMER),
            "marks": { "$sum": 1 },
            "oldest": { "$min": format!("${}", field::MARKED_AT) },
        } },
        doc! { "$sort": { "_id": 1 } },
    ]
}

/// A consumer's mark of an event, or its attempt count on it: both are
/// filed under the consumer and the event.
pub(crate) fn inbox_key(consumer: &str, event_id: Uuid) -> Document {
    doc! { field::CONSUMER: consumer, field::EVENT_ID: uuid(event_id) }
}

/// Records an inbox mark only when it is new: an upsert that matches an
/// existing mark changes nothing and raises no error.
pub(crate) fn inbox_insert(now: i64) -> Document {
    doc! { "$setOnInsert": { field::MARKED_AT: now } }
}

/// A consumer's marks recorded at or before `cutoff`.
pub(crate) fn inbox_older(consumer: &str, cutoff: i64) -> Document {
    doc! { field::CONSUMER: consumer, field::MARKED_AT: { "$lte": cutoff } }
}

/// Adds `started` starts and `finished` ends to an attempt count, creating
/// it (with both fields) when missing.
pub(crate) fn attempt_count(started: i32, finished: i32, now: i64) -> Document {
    doc! {
        "$inc": { field::ATTEMPTS_STARTED: started, field::ATTEMPTS_FINISHED: finished },
        "$set": { field::TOUCHED_AT: now },
    }
}

/// A consumer's attempt counts last changed at or before `cutoff`.
pub(crate) fn attempts_older(consumer: &str, cutoff: i64) -> Document {
    doc! { field::CONSUMER: consumer, field::TOUCHED_AT: { "$lte": cutoff } }
}
