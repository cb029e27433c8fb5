//! Who may write, and how answers are shaped: the bearer token check and
//! the JSON of a result or an error.

use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::State;
use crate::AdminError;

/// Proof that a request bears the page's token: a handler that takes it
/// runs only for such requests. Every other request gets a 401, and so does
/// every request to a read-only page (one started without a token).
pub(crate) struct Authorized;

impl<S: Send + Sync> FromRequestParts<State<S>> for Authorized {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &State<S>) -> Result<Self, Response> {
        let given = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match (&state.token, given) {
            (Some(token), Some(given)) if same(token.as_bytes(), given.as_bytes()) => Ok(Self),
            (None, _) => Err(refuse(
                "this page was started without a token: it is read-only",
            )),
            _ => Err(refuse("a write needs the page's bearer token")),
        }
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

/// A 404 saying what is missing.
pub(crate) fn not_found(message: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": message }))).into_response()
}

/// A 400 saying what is wrong with the request.
pub(crate) fn bad_request(message: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

/// The value as JSON, or the error's chain with a status that says whose
/// fault it is.
pub(crate) fn respond<T: serde::Serialize>(result: Result<T, AdminError>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err(error) => {
            let code = match &error {
                AdminError::UnknownRoute { .. }
                | AdminError::UnknownConsumer { .. }
                | AdminError::NotFound { .. }
                | AdminError::NoDeadLetter { .. }
                | AdminError::UnknownQueue { .. }
                | AdminError::UnknownTenant { .. }
                | AdminError::UnknownStoredInbox { .. } => StatusCode::NOT_FOUND,
                AdminError::Invalid(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            (code, Json(json!({ "error": message(&error) }))).into_response()
        }
    }
}

/// An error's text with its sources, as the page shows it.
pub(crate) fn message(error: &AdminError) -> String {
    tidings_core::port::error_chain(error)
}
