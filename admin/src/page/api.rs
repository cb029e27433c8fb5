//! The JSON API the page calls.

use axum::Json;
use axum::extract::{Query, State as Extract};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use tidings_core::FailedFilter;

use super::State;
use crate::stores::AdminStore;
use crate::{AdminError, FailedEntry};

/// Rows requeued per click at most.
const REQUEUE_LIMIT: usize = 10_000;

#[derive(Debug, Deserialize)]
pub(crate) struct RouteQuery {
    route: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct QueueBody {
    #[cfg_attr(not(feature = "rabbitmq"), allow(dead_code))]
    queue: String,
}

pub(crate) async fn status<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    respond(state.admin.status().await)
}

#[derive(Debug, Deserialize)]
pub(crate) struct TenantQuery {
    tenant: Option<String>,
}

/// Every tenant's status, or with `?tenant=T` that tenant's alone.
pub(crate) async fn tenants<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    Query(query): Query<TenantQuery>,
) -> Response {
    let Some(tenants) = &state.tenants else {
        return not_found("this page serves no tenants");
    };
    match &query.tenant {
        Some(id) => match tenants.get(id) {
            Ok(admin) => respond(admin.status().await),
            Err(unknown) => respond::<()>(Err(unknown)),
        },
        None => respond(tenants.status().await),
    }
}

/// The Prometheus text of the renderer the page was given.
pub(crate) async fn metrics<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    match &state.metrics {
        Some(render) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            render(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "no metrics: the admin page was started without a metrics renderer",
        )
            .into_response(),
    }
}

pub(crate) async fn failed<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    Query(query): Query<RouteQuery>,
) -> Response {
    let rows = state
        .admin
        .failed(&query.route, &FailedFilter::default())
        .await;
    respond(rows.map(|rows| rows.iter().map(FailedEntry::from).collect::<Vec<_>>()))
}

pub(crate) async fn requeue<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    headers: HeaderMap,
    Json(body): Json<RouteQuery>,
) -> Response {
    if let Err(refused) = authorize(&state, &headers) {
        return refused;
    }
    let filter = FailedFilter {
        limit: REQUEUE_LIMIT,
        ..FailedFilter::default()
    };
    let moved = state.admin.requeue(&body.route, &filter, false).await;
    respond(moved.map(|n| json!({ "route": body.route, "requeued": n })))
}

#[cfg(feature = "rabbitmq")]
pub(crate) async fn dead_letters<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    use crate::dead_letters::DeadLetterQueues;
    let Some((broker, queues)) = &state.dead_letters else {
        return respond(Ok(json!([])));
    };
    let mut depths = Vec::new();
    for queue in queues.iter() {
        match broker.depth(queue).await {
            Ok(depth) => depths.push(json!({ "queue": queue, "dead_letter_queue": depth.queue, "messages": depth.messages })),
            Err(e) => return respond::<()>(Err(e)),
        }
    }
    respond(Ok(depths))
}

#[cfg(not(feature = "rabbitmq"))]
pub(crate) async fn dead_letters<S: AdminStore>(Extract(_): Extract<State<S>>) -> Response {
    respond(Ok(json!([])))
}

#[cfg(feature = "rabbitmq")]
pub(crate) async fn replay<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    headers: HeaderMap,
    Json(body): Json<QueueBody>,
) -> Response {
    use crate::dead_letters::{DeadLetterFilter, DeadLetterQueues, ReplayOptions};
    if let Err(refused) = authorize(&state, &headers) {
        return refused;
    }
    let Some((broker, queues)) = &state.dead_letters else {
        return not_found("this page shows no dead-letter queues");
    };
    if !queues.contains(&body.queue) {
        return not_found("this page does not show that queue");
    }
    let filter = DeadLetterFilter {
        limit: REQUEUE_LIMIT,
        ..DeadLetterFilter::default()
    };
    respond(
        broker
            .replay(&body.queue, &filter, ReplayOptions::new())
            .await,
    )
}

#[cfg(not(feature = "rabbitmq"))]
pub(crate) async fn replay<S: AdminStore>(
    Extract(state): Extract<State<S>>,
    headers: HeaderMap,
    Json(_): Json<QueueBody>,
) -> Response {
    if let Err(refused) = authorize(&state, &headers) {
        return refused;
    }
    not_found("this page shows no dead-letter queues")
}

/// Passes a request bearing the page's token; a 401 otherwise.
#[allow(clippy::result_large_err)]
fn authorize<S>(state: &State<S>, headers: &HeaderMap) -> Result<(), Response> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match (&state.token, given) {
        (Some(token), Some(given)) if same(token.as_bytes(), given.as_bytes()) => Ok(()),
        (None, _) => Err(refuse(
            "this page was started without a token: it is read-only",
        )),
        _ => Err(refuse("a write needs the page's bearer token")),
    }
}

/// Compares without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn refuse(message: &str) -> Response {
    let mut response =
        (StatusCode::UNAUTHORIZED, Json(json!({ "error": message }))).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}

fn not_found(message: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": message }))).into_response()
}

fn respond<T: serde::Serialize>(result: Result<T, AdminError>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err(error) => {
            let code = match &error {
                AdminError::UnknownRoute { .. }
                | AdminError::UnknownConsumer { .. }
                | AdminError::NotFound { .. }
                | AdminError::NoDeadLetter { .. }
                | AdminError::UnknownQueue { .. }
                | AdminError::UnknownTenant { .. } => StatusCode::NOT_FOUND,
                AdminError::Invalid(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            let message = tidings_core::port::error_chain(&error);
            (code, Json(json!({ "error": message }))).into_response()
        }
    }
}
