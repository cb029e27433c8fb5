//! Dead letters, one by one: each queue's depth and oldest age (a queue
//! that fails shows its own error), the messages of a queue, one message,
//! and replay or delete of the messages an operator selected, each
//! previewed by a dry run first.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State as Extract};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::State;
use super::access::{Authorized, bad_request, message, not_found, respond};
use super::brokers::{Action, Queue, find, queues};
use crate::AdminError;
use crate::dead_letters::{DeadLetterFilter, ReplayOptions};
use crate::stores::AdminStore;

/// Dead letters listed per queue at most.
const LIST_LIMIT: usize = 200;

/// One queue's line on the page.
#[derive(Debug, Serialize)]
pub(crate) struct QueueLine {
    broker: String,
    queue: String,
    dead_letter_queue: String,
    messages: Option<u64>,
    oldest_age_secs: Option<f64>,
    error: Option<String>,
}

/// Every queue's depth and oldest dead letter's age; a queue that cannot
/// be read carries its error and the others are still shown.
pub(crate) async fn depths<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    let mut lines = Vec::new();
    for queue in queues(&state.dead_letters) {
        let depth = queue.reader.depth(&queue.name).await;
        let oldest = state.history.oldest(&queue.broker, &queue.name);
        lines.push(QueueLine {
            dead_letter_queue: queue.reader.dead_letter_queue_of(&queue.name),
            broker: queue.broker.to_string(),
            messages: depth.as_ref().ok().map(|d| d.messages),
            oldest_age_secs: oldest.filter(|_| depth.as_ref().is_ok_and(|d| d.messages > 0)),
            error: depth.err().map(|e| message(&e)),
            queue: queue.name,
        });
    }
    respond(Ok(lines))
}

/// Names a queue and, optionally, filters.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    broker: Option<String>,
    queue: String,
    id: Option<String>,
    event_type: Option<String>,
    reason: Option<String>,
    older_than_secs: Option<u64>,
    limit: Option<usize>,
}

/// The dead letters of a queue matching the query, left in place.
pub(crate) async fn list<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    Query(query): Query<ListQuery>,
) -> Response {
    let Some(queue) = find(&state.dead_letters, query.broker.as_deref(), &query.queue) else {
        return not_found("this page does not show that queue");
    };
    let filter = DeadLetterFilter {
        event_type: query.event_type,
        older_than: query.older_than_secs.map(Duration::from_secs),
        reason: query.reason,
        ids: query.id.map(|id| vec![id]),
        limit: query.limit.unwrap_or(LIST_LIMIT).min(LIST_LIMIT),
    };
    respond(queue.reader.list(&queue.name, &filter).await)
}

/// The messages an action names.
#[derive(Debug, Deserialize)]
pub(crate) struct Selection {
    broker: Option<String>,
    queue: String,
    #[serde(default)]
    ids: Vec<String>,
    #[serde(default)]
    dry_run: bool,
}

/// Replays or deletes the named dead letters (bearer token).
pub(crate) async fn act<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    _: Authorized,
    Path(action): Path<Action>,
    Json(body): Json<Selection>,
) -> Response {
    if body.ids.is_empty() {
        return bad_request("name at least one dead letter by its id");
    }
    let Some(queue) = find(&state.dead_letters, body.broker.as_deref(), &body.queue) else {
        return not_found("this page does not show that queue");
    };
    respond(run(&queue, body, action).await)
}

/// Checks that every named message is there, then acts on exactly those
/// unless dry.
async fn run(
    queue: &Queue,
    body: Selection,
    action: Action,
) -> Result<crate::dead_letters::DeadLetterReport, AdminError> {
    let filter = DeadLetterFilter {
        ids: Some(body.ids.clone()),
        limit: body.ids.len(),
        ..DeadLetterFilter::default()
    };
    let found = queue.reader.list(&queue.name, &filter).await?;
    if let Some(missing) = body
        .ids
        .iter()
        .find(|id| !found.iter().any(|l| &l.id == *id))
    {
        return Err(AdminError::NoDeadLetter {
            queue: queue.reader.dead_letter_queue_of(&queue.name),
            id: missing.clone(),
        });
    }
    let options = ReplayOptions::new().dry_run(body.dry_run);
    queue
        .reader
        .act(action, &queue.name, &filter, options)
        .await
}
