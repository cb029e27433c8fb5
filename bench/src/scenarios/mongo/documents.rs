//! The documents the raw sides write by hand: a business document, and an
//! outbox document of the shape the store stages.

use std::time::{SystemTime, UNIX_EPOCH};

use tidings_core::OutboxSpec;
use tidings_mongo::mongodb::bson::spec::BinarySubtype;
use tidings_mongo::mongodb::bson::{Binary, Document, doc};
use uuid::Uuid;

use crate::payload::Payload;

/// The order a transaction inserts beside its event.
pub(super) fn order(payload: &Payload) -> Document {
    doc! { "customer": &payload.customer, "amount_cents": payload.amount_cents }
}

/// A pending outbox document of `spec`'s route, due now, written as the
/// store writes one (see the crate's `schema` module).
pub(super) fn pending_event(
    spec: &OutboxSpec<Payload>,
    payload: &Payload,
) -> anyhow::Result<Document> {
    let now = now_micros();
    let binary = |subtype, bytes| Binary { subtype, bytes };
    Ok(doc! {
        "route": spec.name(),
        "event_id": binary(BinarySubtype::Uuid, Uuid::now_v7().as_bytes().to_vec()),
        "destination": spec.route().destination.as_deref().unwrap_or_default(),
        "event_type": "order.placed",
        "payload": binary(BinarySubtype::Generic, serde_json::to_vec(payload)?),
        "content_type": "application/json",
        "headers": [],
        "occurred_at_us": now,
        "seq": now,
        "status": "pending",
        "available_at_us": now,
        "attempts_started": 0_i32,
        "attempts_finished": 0_i32,
    })
}

/// Now, in microseconds since the Unix epoch, as the store keeps times.
pub(super) fn now_micros() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}
