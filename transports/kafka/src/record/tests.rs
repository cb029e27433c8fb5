use super::*;

fn record_of(envelope: &Envelope) -> Record {
    let headers = encode(envelope).unwrap();
    Record {
        topic: "t".into(),
        partition: 0,
        offset: 7,
        key: envelope.ordering_key.clone().map(String::into_bytes),
        payload: envelope.payload.clone(),
        headers: headers
            .iter()
            .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
            .collect(),
    }
}

fn sample() -> Envelope {
    let mut env = Envelope::new(
        "route",
        "orders",
        "order.placed",
        Bytes::from("{}"),
        "application/json",
    );
    env.ordering_key = Some("k".into());
    env.headers.insert("traceparent".into(), "00-a-b-01".into());
    env
}

#[test]
fn headers_use_the_kafka_binding_names() {
    let record = record_of(&sample());
    let names: Vec<&str> = record.headers.iter().map(|(n, _)| n.as_str()).collect();
    for name in [
        "ce_id",
        "ce_type",
        "ce_source",
        "ce_time",
        "ce_specversion",
        "ce_partitionkey",
        "content-type",
        "traceparent",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("ce-")), "{names:?}");
}

#[test]
fn envelopes_round_trip_without_control_headers() {
    let env = sample();
    let mut record = record_of(&env);
    record
        .headers
        .push((PRIOR_DELIVERIES_HEADER.into(), Some(b"2".to_vec())));
    record
        .headers
        .push((RETRY_AT_HEADER.into(), Some(b"1000".to_vec())));
    assert_eq!(record.envelope().unwrap(), env);
    let control = record.control_headers();
    assert_eq!(control.prior_deliveries, 2);
    assert_eq!(control.retry_at, Some(UNIX_EPOCH + Duration::from_secs(1)));
}

#[test]
fn republished_headers_replace_the_control_headers() {
    let mut record = record_of(&sample());
    record
        .headers
        .push((PRIOR_DELIVERIES_HEADER.into(), Some(b"2".to_vec())));
    let headers = record.headers_with(&[(PRIOR_DELIVERIES_HEADER, "3".into())]);
    let priors: Vec<_> = headers
        .iter()
        .filter(|h| h.key == PRIOR_DELIVERIES_HEADER)
        .collect();
    assert_eq!(priors.len(), 1);
    assert_eq!(priors[0].value, Some(&b"3"[..]));
}

#[test]
fn reserved_application_headers_are_refused() {
    let mut env = sample();
    env.headers
        .insert("x-tidings-prior-deliveries".into(), "9".into());
    assert!(matches!(encode(&env), Err(PublishError::Invalid { .. })));
}

#[test]
fn control_headers_are_told_apart_in_any_spelling() {
    assert!(is_control("X-Tidings-Retry-At"));
    assert!(!is_control("x-tidings"));
    assert!(!is_control("ünicode-header-name"));
    assert!(!is_control("x-tidingsü-name"));
    assert!(!is_control(REPLAYED_REASON_HEADER));
}

#[test]
fn a_replay_reason_reaches_the_envelope_and_retries() {
    let mut record = record_of(&sample());
    record.headers.push((
        REPLAYED_REASON_HEADER.into(),
        Some(b"handler: bad total".to_vec()),
    ));
    record
        .headers
        .push((FIRST_FAILURE_HEADER.into(), Some(b"1000".to_vec())));
    let envelope = record.envelope().unwrap();
    assert_eq!(
        envelope
            .headers
            .get(REPLAYED_REASON_HEADER)
            .map(String::as_str),
        Some("handler: bad total")
    );
    assert!(!envelope.headers.contains_key(FIRST_FAILURE_HEADER));
    assert_eq!(record.control_headers().first_failure, Some(1000));
    let copy = record.headers_with(&[]);
    assert!(copy.iter().any(|h| h.key == REPLAYED_REASON_HEADER));
}

#[test]
fn binary_header_values_are_an_attribute_error() {
    let mut record = record_of(&sample());
    record
        .headers
        .push(("x-bin".into(), Some(vec![0xff, 0xfe])));
    assert!(record.envelope().is_err());
}
