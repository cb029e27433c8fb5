use std::time::{Duration, UNIX_EPOCH};

use bytes::Bytes;
use tidings_core::{Envelope, Hlc, StagedEvent};

use super::*;

fn event() -> StagedEvent {
    let mut envelope = Envelope::new(
        "order-events",
        "orders",
        "order.placed",
        Bytes::from_static(b"{\"id\":42}"),
        "application/json",
    );
    envelope.ordering_key = Some("customer-7".into());
    envelope.tenant_id = Some("acme".into());
    envelope
        .headers
        .insert("traceparent".into(), "00-abc-def-01".into());
    envelope.occurred_at = UNIX_EPOCH + Duration::from_micros(1_764_000_000_123_456);
    envelope.hlc = Some(Hlc::from_u64(7 << 16 | 3));
    envelope.expires_at = Some(UNIX_EPOCH + Duration::from_micros(1_764_000_090_000_001));
    StagedEvent {
        envelope,
        delay: Some(Duration::from_millis(1500).into()),
    }
}

#[test]
fn an_event_reads_back_as_it_was_staged() {
    let staged = event();
    let content = Bytes::from(encode(&staged).unwrap());
    let tailed = decode(&content).unwrap();
    assert_eq!(tailed.envelope, staged.envelope);
    assert_eq!(tailed.delay, Duration::from_millis(1500));
}

#[test]
fn a_not_before_time_reads_back_as_the_delay_from_staging() {
    let mut staged = event();
    let at = staged.envelope.occurred_at + Duration::from_secs(90);
    staged.delay = Some(at.into());
    let tailed = decode(&Bytes::from(encode(&staged).unwrap())).unwrap();
    assert_eq!(tailed.delay, Duration::from_secs(90));
    staged.delay = Some((staged.envelope.occurred_at - Duration::from_secs(5)).into());
    let tailed = decode(&Bytes::from(encode(&staged).unwrap())).unwrap();
    assert_eq!(tailed.delay, Duration::ZERO, "a time passed means at once");
}

#[test]
fn a_message_of_version_1_reads_back_without_an_expiry() {
    let mut staged = event();
    staged.envelope.expires_at = None;
    let mut content = encode(&staged).unwrap();
    // Version 1 had no expiry: its presence byte follows the id, the
    // delay, the time and the clock stamp.
    let expiry = 1 + 16 + 8 + 8 + 1 + 8;
    assert_eq!(content.remove(expiry), 0);
    content[0] = 1;
    let tailed = decode(&Bytes::from(content)).unwrap();
    assert_eq!(tailed.envelope, staged.envelope);
}

#[test]
fn every_cut_of_a_message_is_refused_without_a_panic() {
    let content = encode(&event()).unwrap();
    for end in 0..content.len() {
        let cut = Bytes::copy_from_slice(&content[..end]);
        assert!(decode(&cut).is_err(), "a message cut at {end} was read");
    }
    let mut longer = content.clone();
    longer.push(0);
    let err = decode(&Bytes::from(longer)).unwrap_err();
    assert!(err.to_string().contains("left over"), "{err}");
}

#[test]
fn hostile_lengths_and_text_are_refused() {
    let mut content = encode(&event()).unwrap();
    // The route's length, right after the fixed fields (the event has a
    // clock stamp and an expiry), claims 4 GiB.
    let route_at = 1 + 16 + 8 + 8 + 1 + 8 + 1 + 8;
    content[route_at..route_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = decode(&Bytes::from(content)).unwrap_err();
    assert!(err.to_string().contains("runs past the end"), "{err}");

    let mut content = encode(&event()).unwrap();
    content[route_at + 4] = 0xff;
    let err = decode(&Bytes::from(content)).unwrap_err();
    assert!(err.to_string().contains("not UTF-8"), "{err}");

    let err = decode(&Bytes::from_static(b"\x09")).unwrap_err();
    assert!(err.to_string().contains("version 9"), "{err}");
    assert!(decode(&Bytes::new()).is_err());
}

#[test]
fn a_large_payload_round_trips_and_an_oversized_one_is_refused() {
    let mut staged = event();
    staged.envelope.payload = Bytes::from(vec![7u8; 1 << 20]);
    let content = Bytes::from(encode(&staged).unwrap());
    assert_eq!(decode(&content).unwrap().envelope.payload.len(), 1 << 20);

    staged.envelope.payload = Bytes::from(vec![0u8; MAX_MESSAGE_BYTES]);
    let err = encode(&staged).unwrap_err();
    assert!(err.to_string().contains("more than"), "{err}");
}
