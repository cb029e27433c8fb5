//! Spans exported to memory, for tests that check what a trace looks like.
//!
//! One OpenTelemetry pipeline per test binary, installed as the global
//! `tracing` subscriber on first use, so spans of every thread and task are
//! kept; tests running side by side tell their spans apart by their own
//! queue names.

use std::sync::OnceLock;

use opentelemetry::trace::{SpanId, SpanKind, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();

/// The exporter every span of this test binary ends in, installing the
/// pipeline on first use.
pub fn exporter() -> &'static InMemorySpanExporter {
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let tracer = provider.tracer("tidings-tests");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in a trace test binary");
        exporter
    })
}

/// The finished spans so far.
pub fn spans() -> Vec<SpanData> {
    exporter().get_finished_spans().expect("in-memory exporter")
}

/// The finished span named `name`, waiting up to 10 s for it to end.
pub async fn span_named(name: &str) -> SpanData {
    spans_named(name, 1).await.remove(0)
}

/// At least `count` finished spans named `name`, waiting up to 10 s.
pub async fn spans_named(name: &str, count: usize) -> Vec<SpanData> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found: Vec<SpanData> = spans().into_iter().filter(|s| s.name == name).collect();
        if found.len() >= count {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{count} span(s) named {name:?} never ended; spans seen: {:?}",
            spans()
                .iter()
                .map(|s| s.name.to_string())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The value of a span's attribute `key`, as a string.
pub fn attribute(span: &SpanData, key: &str) -> Option<String> {
    let key = Key::from(key.to_owned());
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| match &kv.value {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        })
}

/// Asserts `span` (named `name` in the messages) carries every attribute
/// of `expected` with its value.
#[track_caller]
pub fn assert_attributes(span: &SpanData, name: &str, expected: &[(&str, &str)]) {
    for &(key, value) in expected {
        assert_eq!(attribute(span, key).as_deref(), Some(value), "{name} {key}");
    }
}

/// Whether `span` links to the span `target` (by trace and span id: the
/// link holds the context as read back from a message, remote).
pub fn links_to(span: &SpanData, target: &SpanData) -> bool {
    span.links.iter().any(|link| {
        link.span_context.trace_id() == target.span_context.trace_id()
            && link.span_context.span_id() == target.span_context.span_id()
    })
}

/// Whether `span` has no parent: the root of its trace.
pub fn is_root(span: &SpanData) -> bool {
    span.parent_span_id == SpanId::INVALID
}

/// The spans of one message's trip from a business transaction to its
/// handler, as the messaging conventions name them.
#[derive(Debug)]
pub struct Trip {
    /// The caller's span around the business transaction.
    pub root: SpanData,
    /// `create {destination}`, opened at staging.
    pub create: SpanData,
    /// `send {destination}`, the relay's publish.
    pub send: SpanData,
    /// `process {destination}`, the consumer's handling.
    pub process: SpanData,
}

impl Trip {
    /// The finished spans of the trip through `destination` that started
    /// in the span named `root`, waiting for each to end.
    pub async fn of(root: &str, destination: &str) -> Self {
        Self {
            root: span_named(root).await,
            create: span_named(&format!("create {destination}")).await,
            send: span_named(&format!("send {destination}")).await,
            process: span_named(&format!("process {destination}")).await,
        }
    }

    /// Asserts what the conventions ask of a trip of the single message
    /// `event_id` through the broker `system`: `create` is a child of the
    /// root; `send` (a producer span) links to `create`; `process` (a
    /// consumer span) is in the root's trace, a child of `create` and
    /// linked to it; both name the broker and the message.
    pub fn assert_one_trace(&self, system: &str, event_id: &str) {
        let Self {
            root,
            create,
            send,
            process,
        } = self;
        assert_eq!(create.parent_span_id, root.span_context.span_id());
        assert!(links_to(send, create), "send span does not link to create");
        assert_eq!(send.span_kind, SpanKind::Producer);
        let named = [
            ("messaging.system", system),
            ("messaging.message.id", event_id),
        ];
        assert_attributes(send, "send", &named);
        assert_eq!(process.span_kind, SpanKind::Consumer);
        assert_eq!(
            process.span_context.trace_id(),
            root.span_context.trace_id()
        );
        assert_eq!(process.parent_span_id, create.span_context.span_id());
        assert!(
            links_to(process, create),
            "process span does not link to create"
        );
        let process_named = [
            ("messaging.system", system),
            ("messaging.operation.type", "process"),
            ("messaging.message.id", event_id),
        ];
        assert_attributes(process, "process", &process_named);
    }
}
