//! Failed outbox rows, one by one: the list, and requeue or delete of the
//! rows an operator selected, each previewed by a dry run first. A request
//! naming a stored inbox (`stored`) is about that inbox's failed messages.

use axum::Json;
use axum::extract::{Path, Query, State as Extract};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use tidings_core::{FailedFilter, FailedRow};
use uuid::Uuid;

use super::State;
use super::access::{Authorized, respond};
use crate::AdminError;
use crate::stores::AdminStore;

/// Failed rows listed per route at most.
const LIST_LIMIT: usize = 500;

#[derive(Debug, Deserialize)]
pub(crate) struct RouteQuery {
    route: String,
    stored: Option<String>,
}

/// The rows an action names.
#[derive(Debug, Deserialize)]
pub(crate) struct Selection {
    route: String,
    #[serde(default)]
    stored: Option<String>,
    #[serde(default)]
    ids: Vec<Uuid>,
    #[serde(default)]
    dry_run: bool,
}

/// What a requeue or delete did or, dry, would do.
#[derive(Debug, Serialize)]
struct Report {
    route: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    stored: Option<String>,
    /// The rows taken (or that would be), with their reasons.
    rows: Vec<FailedRow>,
    matched: usize,
    done: u64,
    dry_run: bool,
}

/// The failed rows of a route, oldest failure first.
pub(crate) async fn list<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    Query(query): Query<RouteQuery>,
) -> Response {
    let filter = FailedFilter {
        limit: LIST_LIMIT,
        ..FailedFilter::default()
    };
    let rows = async {
        let admin = state.admin_for(query.stored.as_deref())?;
        admin.failed(&query.route, &filter).await
    };
    respond(rows.await)
}

/// What an operator does to the failed rows selected, named by the last
/// part of the request's path.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Makes them pending again.
    Requeue,
    /// Deletes them.
    Delete,
}

/// Requeues or deletes the named failed rows (bearer token).
pub(crate) async fn act<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    _: Authorized,
    Path(action): Path<Action>,
    Json(body): Json<Selection>,
) -> Response {
    respond(run(&state, body, action).await)
}

/// Checks every named row, then acts on exactly those unless dry.
async fn run<S: AdminStore>(
    state: &State<S>,
    body: Selection,
    action: Action,
) -> Result<Report, AdminError> {
    let admin = state.admin_for(body.stored.as_deref())?;
    let rows = admin.selected(&body.route, &body.ids).await?;
    let done = match (body.dry_run, action) {
        (true, _) => 0,
        (false, Action::Requeue) => {
            let filter = FailedFilter {
                ids: Some(body.ids.clone()),
                limit: body.ids.len(),
                ..FailedFilter::default()
            };
            admin.requeue(&body.route, &filter, false).await?
        }
        (false, Action::Delete) => admin.delete_failed(&body.route, &body.ids, false).await?,
    };
    Ok(Report {
        matched: rows.len(),
        rows,
        route: body.route,
        stored: body.stored,
        done,
        dry_run: body.dry_run,
    })
}
