//! The span of each messaging operation.

use tracing::Span;

use crate::Envelope;

/// How a delivery is settled, naming the `settle` span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Removed from the queue.
    Ack,
    /// Returned for redelivery.
    Nack,
    /// Moved to the dead-letter queue.
    DeadLetter,
}

impl Settle {
    /// The `messaging.operation.name`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::Nack => "nack",
            Self::DeadLetter => "dead_letter",
        }
    }
}

/// A span after the OpenTelemetry messaging conventions: the attributes
/// every broker operation carries, `$fields` (each with its trailing comma),
/// then `error.type`, recorded by [`record_error`] on failure.
macro_rules! messaging_span {
    ($level:ident, $operation:literal, $name:expr, $kind:literal, $system:expr, $destination:expr, $($fields:tt)*) => {
        tracing::span!(
            tracing::Level::$level,
            $operation,
            otel.name = format!("{} {}", $name, $destination),
            otel.kind = $kind,
            otel.status_code = tracing::field::Empty,
            messaging.system = $system,
            messaging.operation.type = $operation,
            messaging.operation.name = $name,
            messaging.destination.name = $destination,
            $($fields)*
            error.type = tracing::field::Empty,
        )
    };
}

/// The `create {destination}` span of a staged event; staging captures its
/// context into the envelope (see [`inject`](super::inject)).
pub fn create_span(envelope: &Envelope) -> Span {
    tracing::debug_span!(
        "create",
        otel.name = format!("create {}", envelope.destination),
        otel.kind = "producer",
        messaging.operation.type = "create",
        messaging.operation.name = "create",
        messaging.destination.name = %envelope.destination,
        messaging.message.id = %envelope.event_id,
        tidings.route = %envelope.route,
    )
}

/// The `send {destination}` span of one published window, linked to each
/// message's creation context. A window of one message names it in
/// `messaging.message.id`, and its correlation id, where it has one, in
/// `messaging.message.conversation_id`; a larger one counts its messages in
/// `messaging.batch.message_count`. Transports record their broker's
/// attributes on it while they publish: RabbitMQ the
/// `messaging.rabbitmq.destination.routing_key` the window shares, SQS the
/// `aws.sqs.queue.url`.
pub fn send_span(system: &'static str, destination: &str, envelopes: &[Envelope]) -> Span {
    let span = messaging_span!(
        INFO,
        "send",
        "send",
        "producer",
        system,
        destination,
        messaging.message.id = tracing::field::Empty,
        messaging.message.conversation_id = tracing::field::Empty,
        messaging.batch.message_count = tracing::field::Empty,
        messaging.rabbitmq.destination.routing_key = tracing::field::Empty,
        aws.sqs.queue.url = tracing::field::Empty,
    );
    match envelopes {
        [one] => record_message(&span, one),
        many => {
            span.record("messaging.batch.message_count", many.len());
        }
    };
    super::link_all(&span, envelopes);
    span
}

/// The `process {queue}` span of one delivery, or of several handled in
/// one transaction. One is named in `messaging.message.id`, with its
/// correlation id, where it has one, in
/// `messaging.message.conversation_id`, and its span
/// is a child of the message's creation context, and linked to it, when
/// the message carries one (in a trace of its own otherwise); several are
/// counted in `messaging.batch.message_count` and linked to each
/// message's creation context.
pub fn process_span(
    system: &'static str,
    queue: &str,
    consumer: &str,
    envelopes: &[&Envelope],
    delivery_count: Option<u32>,
) -> Span {
    let span = messaging_span!(
        INFO,
        "process",
        "process",
        "consumer",
        system,
        queue,
        messaging.consumer.group.name = consumer,
        messaging.message.id = tracing::field::Empty,
        messaging.message.conversation_id = tracing::field::Empty,
        messaging.message.delivery_count = delivery_count,
        messaging.batch.message_count = tracing::field::Empty,
    );
    match envelopes {
        [one] => {
            record_message(&span, one);
            super::follow(&span, one);
        }
        many => {
            span.record("messaging.batch.message_count", many.len());
            for envelope in many {
                super::link_all(&span, std::slice::from_ref(*envelope));
            }
        }
    }
    span
}

/// Names the one message of `span` in `messaging.message.id`, and its
/// correlation id, where it carries one, in the conventions'
/// `messaging.message.conversation_id`.
fn record_message(span: &Span, envelope: &Envelope) {
    span.record(
        "messaging.message.id",
        tracing::field::display(envelope.event_id),
    );
    if let Some(id) = &envelope.correlation_id {
        span.record("messaging.message.conversation_id", id.as_str());
    }
}

/// The span settling one delivery: `ack {queue}`, `nack {queue}` or
/// `dead_letter {queue}`.
pub fn settle_span(system: &'static str, queue: &str, settle: Settle) -> Span {
    messaging_span!(DEBUG, "settle", settle.name(), "client", system, queue,)
}

/// Marks `span` failed with the conventions' `error.type`, a low-cardinality
/// class of the error such as `timeout` or `parked`.
pub fn record_error(span: &Span, error_type: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error_type);
}
