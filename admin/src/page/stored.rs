//! Stored inboxes beside the page's store: each one's backlog, and which
//! store a failed-row request is about. A stored inbox's table is an
//! outbox table whose routes are its consumers, so its failed messages go
//! through the failed-row code as they are.

use axum::Json;
use axum::extract::State as Extract;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::State;
use super::access::message;
use crate::stores::AdminStore;
use crate::{Admin, AdminError};

/// Each stored inbox's routes (its consumers) with their backlog, in the
/// order they were added; one that cannot be read carries its error.
pub(crate) async fn list<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    let mut inboxes = Vec::with_capacity(state.stored.len());
    for (name, admin) in state.stored.iter() {
        inboxes.push(match admin.routes_status().await {
            Ok(routes) => json!({ "name": name, "routes": routes }),
            Err(e) => json!({ "name": name, "routes": [], "error": message(&e) }),
        });
    }
    Json(inboxes).into_response()
}

impl<S> State<S> {
    /// The operations a failed-row request names: the page's store's, or
    /// with `stored` those of the stored inbox of that name.
    pub(crate) fn admin_for(&self, stored: Option<&str>) -> Result<&Admin<S>, AdminError> {
        let Some(name) = stored else {
            return Ok(&self.admin);
        };
        let found = self.stored.iter().find(|(n, _)| n == name);
        found
            .map(|(_, admin)| admin)
            .ok_or_else(|| AdminError::UnknownStoredInbox {
                name: name.to_owned(),
                known: self.stored.iter().map(|(n, _)| n.clone()).collect(),
            })
    }
}
