//! The read side of the JSON API: status, tenants, what the page looks at,
//! the samples of the last hour, and `/metrics`.

use std::fmt::Write;

use axum::Json;
use axum::extract::{Query, State as Extract};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::State;
use super::access::{not_found, respond};
use crate::stores::AdminStore;

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

/// What the page looks at and how it behaves: the labelled context
/// (database, schema, tenant, broker), whether it is read-only, its
/// refresh interval and whether `/metrics` is served.
pub(crate) async fn context<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    let items: Vec<_> = state
        .context
        .iter()
        .map(|(label, value)| json!({ "label": label, "value": value }))
        .collect();
    Json(json!({
        "context": items,
        "read_only": state.token.is_none(),
        "refresh_secs": state.refresh.as_secs_f64(),
        "sample_secs": state.history.every().as_secs_f64(),
        "metrics": state.metrics.is_some() || !state.dead_letters.is_empty(),
    }))
    .into_response()
}

/// The samples of the last hour, oldest first.
pub(crate) async fn history<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    Json(json!({
        "every_secs": state.history.every().as_secs_f64(),
        "samples": state.history.samples(),
    }))
    .into_response()
}

/// The Prometheus text of the renderer the page was given, followed by
/// the dead-letter gauges of the queues it shows.
pub(crate) async fn metrics<S: AdminStore>(Extract(state): Extract<State<S>>) -> Response {
    if state.metrics.is_none() && state.dead_letters.is_empty() {
        return (
            StatusCode::NOT_FOUND,
            "no metrics: the admin page was started without a metrics renderer or dead-letter queues",
        )
            .into_response();
    }
    let mut text = state
        .metrics
        .as_ref()
        .map(|render| render())
        .unwrap_or_default();
    text.push_str(&dead_letter_gauges(&state.history.dead_letter_gauges()));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// `tidings_dead_letter_depth` and `tidings_dead_letter_oldest_age_seconds`
/// per queue, in the Prometheus text format.
fn dead_letter_gauges(gauges: &[(String, String, u64, Option<f64>)]) -> String {
    let mut text = String::new();
    if gauges.is_empty() {
        return text;
    }
    text.push_str("# HELP tidings_dead_letter_depth Messages parked in a dead-letter queue.\n");
    text.push_str("# TYPE tidings_dead_letter_depth gauge\n");
    for (broker, queue, depth, _) in gauges {
        let labels = labels(broker, queue);
        let _ = writeln!(text, "tidings_dead_letter_depth{{{labels}}} {depth}");
    }
    text.push_str(
        "# HELP tidings_dead_letter_oldest_age_seconds Age of the oldest dead letter of a queue (0 when empty).\n",
    );
    text.push_str("# TYPE tidings_dead_letter_oldest_age_seconds gauge\n");
    for (broker, queue, _, age) in gauges {
        let labels = labels(broker, queue);
        let age = age.unwrap_or(0.0);
        let _ = writeln!(
            text,
            "tidings_dead_letter_oldest_age_seconds{{{labels}}} {age:.3}"
        );
    }
    text
}

fn labels(broker: &str, queue: &str) -> String {
    format!("broker=\"{}\",queue=\"{}\"", escape(broker), escape(queue))
}

/// A label value escaped as the text format asks.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_are_written_per_queue_with_escaped_labels() {
        let gauges = vec![
            ("rabbitmq".into(), "orders".into(), 2, Some(61.5)),
            ("sqs".into(), "odd\"name".into(), 0, None),
        ];
        let text = dead_letter_gauges(&gauges);
        assert!(
            text.contains("tidings_dead_letter_depth{broker=\"rabbitmq\",queue=\"orders\"} 2\n")
        );
        assert!(text.contains(
            "tidings_dead_letter_oldest_age_seconds{broker=\"rabbitmq\",queue=\"orders\"} 61.500\n"
        ));
        assert!(text.contains("queue=\"odd\\\"name\"} 0\n"));
        assert_eq!(text.matches("# TYPE").count(), 2);
    }
}
