//! Staging captures the current trace into the envelope's W3C headers.

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tidings_core::OutboxSpec;
use tidings_core::memory::MemoryStore;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("traced").destination("traced-q");

fn subscriber() -> impl tracing::Subscriber + Send + Sync {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(InMemorySpanExporter::default())
        .build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
}

#[test]
fn staging_in_a_span_carries_its_trace() {
    let _guard = tracing::subscriber::set_default(subscriber());
    let store = MemoryStore::new();
    let root = tracing::info_span!("place_order");
    let (trace_id, staged) = root.in_scope(|| {
        let trace_id = root.context().span().span_context().trace_id();
        let mut ctx = store.begin();
        let staged = ctx
            .outbox()
            .stage(&EVENTS, "t", &1)
            .unwrap()
            .envelope()
            .clone();
        (trace_id, staged)
    });
    let traceparent = staged.traceparent().expect("a traceparent");
    assert!(
        traceparent.starts_with(&format!("00-{trace_id}-")),
        "{traceparent}"
    );
    assert_eq!(
        staged.headers.len(),
        1,
        "a trace without trace state adds the traceparent alone: {:?}",
        staged.headers
    );
}

#[test]
fn a_staged_traceparent_replaces_the_captured_one() {
    let _guard = tracing::subscriber::set_default(subscriber());
    let store = MemoryStore::new();
    let own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let staged = tracing::info_span!("place_order").in_scope(|| {
        let mut ctx = store.begin();
        let staged = ctx.outbox().stage(&EVENTS, "t", &1).unwrap();
        staged.header("traceparent", own).envelope().clone()
    });
    assert_eq!(staged.traceparent(), Some(own));
}

#[test]
fn staging_outside_a_trace_adds_no_headers() {
    let store = MemoryStore::new();
    let mut ctx = store.begin();
    let staged = ctx.outbox().stage(&EVENTS, "t", &1).unwrap();
    assert!(staged.envelope().headers.is_empty());
}
