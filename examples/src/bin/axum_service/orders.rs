//! The HTTP API: `POST /orders` writes the order and stages its event in
//! one transaction, so the event exists exactly when the order does.

use axum::Router;
use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::{Deserialize, Serialize};
use tidings::postgres::PgOutboxStore;
use tidings::postgres::sqlx;

use crate::{ORDER_EVENTS, OrderPlaced};

/// The body of `POST /orders`.
#[derive(Debug, Deserialize)]
struct NewOrder {
    customer: String,
    amount_cents: i64,
}

/// The answer to a placed order: `201 Created` with its id.
#[derive(Debug, Serialize)]
struct Placed {
    id: i64,
}

/// The routes, sharing the store (a pool inside, cheap to clone).
pub(crate) fn router(store: PgOutboxStore) -> Router {
    Router::new()
        .route("/orders", post(place_order))
        .with_state(store)
}

/// Writes the order, stages `order.placed` in the same transaction, then
/// checks the order as written; a rejected order rolls back with its event
/// and answers `422`.
async fn place_order(
    State(store): State<PgOutboxStore>,
    Json(order): Json<NewOrder>,
) -> Result<(StatusCode, Json<Placed>), ApiError> {
    let mut ctx = store.begin().await?;
    let id: i64 = sqlx::query_scalar(
        "insert into orders (customer, amount_cents) values ($1, $2) returning id",
    )
    .bind(&order.customer)
    .bind(order.amount_cents)
    .fetch_one(ctx.tx())
    .await?;
    let event = OrderPlaced {
        order_id: id,
        amount_cents: order.amount_cents,
    };
    // One customer's events reach the consumer in the order they were placed.
    ctx.outbox()
        .stage(&ORDER_EVENTS, "order.placed", &event)?
        .ordering_key(order.customer);
    // Rules that read the stored order run after the writes; a rejection
    // takes the order and its staged event back together.
    if order.amount_cents <= 0 {
        ctx.rollback().await?;
        return Err(ApiError::Invalid(
            "amount_cents must be positive".to_owned(),
        ));
    }
    ctx.commit().await?;
    tracing::debug!(order.id = id, "order placed");
    Ok((StatusCode::CREATED, Json(Placed { id })))
}

/// The body of an error answer.
#[derive(Debug, Serialize)]
struct Problem {
    error: String,
}

/// Why a request failed.
#[derive(Debug)]
enum ApiError {
    /// The order breaks a rule: `422`, with the reason.
    Invalid(String),
    /// The database or the outbox failed: `500`, logged.
    Internal(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for ApiError {
    fn from(error: E) -> Self {
        Self::Internal(error.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error) = match self {
            Self::Invalid(reason) => (StatusCode::UNPROCESSABLE_ENTITY, reason),
            Self::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "placing an order failed");
                let error = "internal error".to_owned();
                (StatusCode::INTERNAL_SERVER_ERROR, error)
            }
        };
        (status, Json(Problem { error })).into_response()
    }
}
