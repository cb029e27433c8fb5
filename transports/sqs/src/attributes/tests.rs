use bytes::Bytes;
use tidings_core::Hlc;

use super::*;

fn full_envelope() -> Envelope {
    let mut env = Envelope::new(
        "order-events",
        "orders",
        "order.placed",
        Bytes::from_static(b"{\"id\":1}"),
        "application/json",
    );
    env.headers.insert("traceparent".into(), "00-a-b-01".into());
    env.headers.insert("x-note".into(), "ünicode".into());
    env.headers.insert("has space".into(), "v".into());
    env.headers.insert("x-empty".into(), String::new());
    env.ordering_key = Some("order-1".into());
    env.correlation_id = Some("corr".into());
    env.causation_id = Some("cause".into());
    env.tenant_id = Some("tenant".into());
    env.hlc = Some(Hlc::from_u64(42));
    env.attempts = 2;
    env
}

fn round_trip(env: &Envelope) -> (Encoded, Envelope) {
    let encoded = encode(env).unwrap();
    let raw = encoded.sqs_attributes();
    let back = decode(&encoded.body, Some(&raw)).unwrap();
    (encoded, back)
}

#[test]
fn a_full_envelope_fits_ten_attributes_and_round_trips() {
    let env = full_envelope();
    let (encoded, back) = round_trip(&env);
    assert_eq!(back, env);
    assert_eq!(encoded.attributes.len(), MAX_MESSAGE_ATTRIBUTES);
    let names: Vec<_> = encoded.attributes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..5],
        ["ce-specversion", "ce-id", "ce-source", "ce-type", "ce-time"]
    );
    assert!(names.contains(&"traceparent"));
    assert_eq!(names.last(), Some(&PACKED_ATTRIBUTE));
}

#[test]
fn a_small_envelope_is_not_packed() {
    let env = Envelope::new("r", "d", "t", Bytes::from_static(b"x"), "text/plain");
    let (encoded, back) = round_trip(&env);
    assert_eq!(back, env);
    assert!(
        encoded
            .attributes
            .iter()
            .all(|(n, _)| n != PACKED_ATTRIBUTE)
    );
}

#[test]
fn binary_and_empty_payloads_round_trip() {
    for payload in [&b""[..], &[0, 255, 7][..]] {
        let env = Envelope::new("r", "d", "t", Bytes::copy_from_slice(payload), "a/b");
        assert_eq!(round_trip(&env).1, env);
    }
}

#[test]
fn size_counts_names_types_and_values() {
    let attributes = vec![("ab".to_owned(), "xyz".to_owned())];
    assert_eq!(message_size("body", &attributes), 4 + 2 + 6 + 3);
}

#[test]
fn illegal_names_are_recognised() {
    assert!(is_legal_name("x-note.v2"));
    for name in ["", ".a", "a.", "a..b", "AWS.x", "amazon.y", "a b", "é"] {
        assert!(!is_legal_name(name), "{name:?}");
    }
}
