//! The W3C trace context in an envelope's headers, read and written by
//! OpenTelemetry's `TraceContextPropagator`.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{TRACEPARENT, TRACESTATE};
use crate::{Envelope, Headers};

/// Writes the propagator's fields into headers, leaving out empty ones:
/// the propagator writes a `tracestate` even when the trace has none, and
/// the W3C recommendation is to send no header then rather than an empty
/// one, which every stored row and every message would otherwise carry.
struct Writer<'a>(&'a mut Headers);

impl Injector for Writer<'_> {
    fn set(&mut self, key: &str, value: String) {
        if !value.is_empty() {
            self.0.insert(key.to_owned(), value);
        }
    }
}

struct Reader<'a>(&'a Headers);

impl Extractor for Reader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Writes `span`'s context into `headers` when it is a valid one.
pub(super) fn inject(span: &tracing::Span, headers: &mut Headers) {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return;
    }
    headers.remove(TRACESTATE);
    TraceContextPropagator::new().inject_context(&cx, &mut Writer(headers));
}

/// The creation context the envelope carries, if any; a `traceparent`
/// that does not parse is logged at `debug` and ignored.
fn creation_context(envelope: &Envelope) -> Option<SpanContext> {
    let traceparent = envelope.headers.get(TRACEPARENT)?;
    let cx = TraceContextPropagator::new().extract(&Reader(&envelope.headers));
    let span_context = cx.span().span_context().clone();
    if span_context.is_valid() {
        return Some(span_context);
    }
    tracing::debug!(
        messaging.message.id = %envelope.event_id,
        %traceparent,
        "ignoring a traceparent that is not a valid W3C trace context"
    );
    None
}

/// Parents `span` to the envelope's creation context and links it there;
/// without one, makes `span` the root of a trace of its own rather than a
/// child of whatever span the consumer's loop runs in.
pub(super) fn follow(span: &tracing::Span, envelope: &Envelope) {
    if span.is_disabled() {
        return;
    }
    let creation = creation_context(envelope);
    let parent = match &creation {
        Some(creation) => opentelemetry::Context::new().with_remote_span_context(creation.clone()),
        None => opentelemetry::Context::new(),
    };
    if let Err(error) = span.set_parent(parent) {
        tracing::trace!(%error, "span not recorded by OpenTelemetry");
    }
    if let Some(creation) = creation {
        span.add_link(creation);
    }
}

pub(super) fn link_all(span: &tracing::Span, envelopes: &[Envelope]) {
    if span.is_disabled() {
        return;
    }
    for envelope in envelopes {
        if let Some(creation) = creation_context(envelope) {
            span.add_link(creation);
        }
    }
}
