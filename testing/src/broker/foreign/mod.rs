//! The foreign-producer suite: a source reads the events other CloudEvents
//! producers send, and parks with the reason only what it cannot read.

mod message;

use std::future::Future;
use std::time::{Duration, SystemTime};

use cloudevents::Event;
pub use message::{ForeignMessage, expected_envelope, sample_events};
use tidings_core::Envelope;

use super::BrokerHarness;
use super::fixtures::{next, subscribe};

/// What a transport with a wire format gives the foreign-producer suite.
pub trait ForeignProducer: BrokerHarness {
    /// The attribute-name prefixes of the CloudEvents bindings this
    /// transport's messages can carry (`ce-`, `ce_`, `cloudEvents_`,
    /// `cloudEvents:`).
    fn binding_prefixes(&self) -> &'static [&'static str];

    /// Sends `message` to `queue` with a plain client of the broker, as a
    /// producer outside tidings would; `content-type` goes where the
    /// transport's binding puts it.
    fn send_foreign(
        &self,
        queue: &str,
        message: &ForeignMessage,
    ) -> impl Future<Output = ()> + Send;

    /// The reason of the first message in the dead-letter queue
    /// `dead_letter_queue`, read with a plain client; `None` when none
    /// arrives within a few seconds.
    fn dead_letter_reason(
        &self,
        dead_letter_queue: &str,
    ) -> impl Future<Output = Option<String>> + Send;
}

/// Expands to one `#[tokio::test]` per case of the foreign-producer suite.
#[macro_export]
macro_rules! foreign_producer_conformance {
    ($harness:expr) => {
        $crate::conformance_cases!([broker::foreign], $crate::broker::BrokerHarness::teardown, $harness;
            foreign_binary_events_are_read,
            foreign_structured_events_are_read,
            foreign_times_with_offsets_are_read,
            unreadable_foreign_events_are_parked_with_the_reason,
        );
    };
}

/// Sends `messages`, receives as many, and checks each against the
/// envelope its event should read as, in whatever order they arrive.
async fn receive_as<H: ForeignProducer>(h: &H, messages: Vec<(ForeignMessage, Envelope)>) {
    let f = h.fixture().await;
    let sent_at = tidings_core::truncate_to_micros(SystemTime::now());
    for (message, _) in &messages {
        h.send_foreign(&f.queue, message).await;
    }
    let mut expected: Vec<Envelope> = messages.into_iter().map(|(_, e)| e).collect();
    let mut stream = subscribe(&f.source, &f.queue).await;
    while !expected.is_empty() {
        let delivery = next(&mut stream).await;
        let got = delivery.envelope().clone();
        delivery.ack().await.expect("ack");
        let at = expected
            .iter()
            .position(|e| e.event_id == got.event_id)
            .unwrap_or_else(|| panic!("unexpected {got:?}"));
        let want = expected.swap_remove(at);
        assert_eq!(got.event_type, want.event_type, "{want:?}");
        assert_eq!(got.route, want.route, "{want:?}");
        assert_eq!(got.payload, want.payload, "{want:?}");
        assert_eq!(got.content_type, want.content_type, "{want:?}");
        assert_eq!(got.headers, want.headers, "{want:?}");
        match want.occurred_at == SystemTime::UNIX_EPOCH {
            true => assert!(got.occurred_at >= sent_at, "{want:?}"),
            false => assert_eq!(got.occurred_at, want.occurred_at, "{want:?}"),
        }
    }
}

/// Events in binary mode, under every binding prefix the transport
/// carries, arrive with every attribute read.
pub async fn foreign_binary_events_are_read<H: ForeignProducer>(h: &H) {
    let messages = (h.binding_prefixes().iter())
        .flat_map(|prefix| samples_as(|event| ForeignMessage::binary(event, prefix)))
        .collect();
    receive_as(h, messages).await;
}

/// Events in structured mode arrive read, labelled with their content
/// type or not.
pub async fn foreign_structured_events_are_read<H: ForeignProducer>(h: &H) {
    let messages = [true, false]
        .into_iter()
        .flat_map(|labelled| samples_as(|event| ForeignMessage::structured(event, labelled)))
        .collect();
    receive_as(h, messages).await;
}

/// Every sample event as `message` encodes it, with the envelope it must
/// be read as.
fn samples_as(message: impl Fn(&Event) -> ForeignMessage) -> Vec<(ForeignMessage, Envelope)> {
    let events = sample_events().into_iter();
    events
        .map(|event| (message(&event), expected_envelope(&event)))
        .collect()
}

/// Times with offsets other than UTC name the same instant.
pub async fn foreign_times_with_offsets_are_read<H: ForeignProducer>(h: &H) {
    let mut messages = Vec::new();
    let utc = SystemTime::UNIX_EPOCH + Duration::from_micros(1_795_618_800_250_000);
    for (n, time) in [
        "2026-11-25T17:00:00.25+02:00",
        "2026-11-25T09:30:00.25-05:30",
    ]
    .into_iter()
    .enumerate()
    {
        let prefix = h.binding_prefixes()[0];
        let attributes = [
            ("specversion", "1.0"),
            ("id", &format!("offset-{n}")),
            ("source", "/clock"),
            ("type", "com.example.tick"),
            ("time", time),
        ]
        .into_iter()
        .map(|(name, value)| (format!("{prefix}{name}"), value.to_owned()))
        .collect();
        let message = ForeignMessage {
            attributes,
            body: b"tick".to_vec(),
        };
        let id = tidings_core::cloudevents::event_id_for("/clock", &format!("offset-{n}"));
        let mut expected = Envelope::new(
            "/clock",
            "",
            "com.example.tick",
            bytes::Bytes::from_static(b"tick"),
            tidings_core::RAW_CONTENT_TYPE,
        );
        expected.event_id = id;
        expected.occurred_at = utc;
        expected
            .headers
            .insert("ce-id".to_owned(), format!("offset-{n}"));
        messages.push((message, expected));
    }
    receive_as(h, messages).await;
}

/// A message that lacks what every event has (a source) is parked by the
/// source with a reason naming it, and the next message still arrives.
pub async fn unreadable_foreign_events_are_parked_with_the_reason<H: ForeignProducer>(h: &H) {
    let f = h.fixture().await;
    let prefix = h.binding_prefixes()[0];
    let mut broken = ForeignMessage::binary(&sample_events()[0], prefix);
    broken
        .attributes
        .retain(|(name, _)| !name.ends_with("source"));
    h.send_foreign(&f.queue, &broken).await;
    let good = sample_events().remove(1);
    h.send_foreign(&f.queue, &ForeignMessage::binary(&good, prefix))
        .await;

    let mut stream = subscribe(&f.source, &f.queue).await;
    let delivery = next(&mut stream).await;
    assert_eq!(delivery.envelope().event_type, "com.example.invoice.sent");
    delivery.ack().await.expect("ack");
    let reason = h
        .dead_letter_reason(&f.dead_letter_queue)
        .await
        .expect("the unreadable message is parked");
    assert!(reason.contains("ce-source"), "{reason}");
}
