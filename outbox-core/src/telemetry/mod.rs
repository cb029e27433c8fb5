//! Spans named after the OpenTelemetry messaging semantic conventions, and
//! the W3C trace context that ties them into one trace.
//!
//! Every message gets these spans (see `docs/src/operations/tracing.md`
//! for the attributes of each):
//!
//! | span | kind | `messaging.operation.type` | where |
//! |---|---|---|---|
//! | `create {destination}` | producer | `create` | staging, inside the caller's transaction |
//! | `send {destination}` | producer | `send` | the relay, one per published window, linked to each message's `create` span |
//! | `process {queue}` | consumer | `process` | the consumer, one per delivery, a child of the message's `create` span and linked to it |
//! | `ack`, `nack` or `dead_letter {queue}` | client | `settle` | the consumer, settling the delivery |
//!
//! The names are set through `otel.name` and the kinds through `otel.kind`,
//! the fields `tracing-opentelemetry` reads; without the `otel` feature
//! they are plain `tracing` fields.
//!
//! With the `otel` feature, staging writes the `create` span's context into
//! the envelope's `traceparent` and `tracestate` headers (the W3C trace
//! context, through OpenTelemetry's `TraceContextPropagator`); the store
//! keeps them with the row's other headers and transports carry them as
//! the CloudEvents distributed-tracing extension attributes of those
//! names. A header that does not parse is ignored with a `debug` log: the
//! message is processed as one that came without a context, in a trace of
//! its own.
//!
//! ```
//! use tidings_core::telemetry;
//!
//! let span = telemetry::settle_span("rabbitmq", "orders", telemetry::Settle::Ack);
//! let _entered = span.enter();
//! ```

#[cfg(feature = "otel")]
mod context;
mod spans;

pub use spans::{Settle, create_span, process_span, record_error, send_span, settle_span};

use crate::Envelope;

/// `messaging.system` of a publisher or source that does not name its
/// broker.
pub const UNKNOWN_SYSTEM: &str = "unknown";

/// The header carrying the W3C `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// The header carrying the W3C `tracestate`.
pub const TRACESTATE: &str = "tracestate";

/// Opens and closes the `create` span of a staged event and, with the
/// `otel` feature, writes its context into the envelope's headers; where
/// the `create` span is filtered out, the current span's context is
/// written instead, so the consumer still joins the caller's trace.
pub fn capture(envelope: &mut Envelope) {
    let span = create_span(envelope);
    match span.is_disabled() {
        true => inject(&tracing::Span::current(), envelope),
        false => inject(&span, envelope),
    }
}

/// Writes `span`'s trace context into the envelope's `traceparent` and
/// `tracestate` headers, replacing what they held, when the span belongs
/// to a valid OpenTelemetry trace. Without the `otel` feature, or outside
/// a trace, the headers are left as they are.
pub fn inject(span: &tracing::Span, envelope: &mut Envelope) {
    #[cfg(feature = "otel")]
    context::inject(span, &mut envelope.headers);
    #[cfg(not(feature = "otel"))]
    let _ = (span, envelope);
}

/// Makes the message's creation context, carried in its `traceparent` and
/// `tracestate` headers, the parent of `span` and adds a link to it.
/// Headers that are absent or do not parse leave `span` where it is, with
/// a `debug` log for the latter. Call before the span is entered.
pub fn follow(span: &tracing::Span, envelope: &Envelope) {
    #[cfg(feature = "otel")]
    context::follow(span, envelope);
    #[cfg(not(feature = "otel"))]
    let _ = (span, envelope);
}

/// Adds a link from `span` to each message's creation context. Call
/// before the span is entered.
pub fn link_all(span: &tracing::Span, envelopes: &[Envelope]) {
    #[cfg(feature = "otel")]
    context::link_all(span, envelopes);
    #[cfg(not(feature = "otel"))]
    let _ = (span, envelopes);
}
