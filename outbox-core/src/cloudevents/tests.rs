use super::*;

fn full_envelope() -> Envelope {
    let mut env = Envelope::new(
        "order-events",
        "orders",
        "order.placed",
        Bytes::from_static(b"{\"id\":1}"),
        "application/json",
    );
    env.headers
        .insert("traceparent".into(), "00-abc-def-01".into());
    env.headers.insert("x-custom".into(), "v".into());
    env.ordering_key = Some("order-1".into());
    env.correlation_id = Some("corr".into());
    env.causation_id = Some("cause".into());
    env.tenant_id = Some("tenant-9".into());
    env.hlc = Some(Hlc::from_u64(123_456));
    env.expires_at = Some(crate::truncate_to_micros(
        std::time::SystemTime::now() + std::time::Duration::from_secs(90),
    ));
    env.attempts = 3;
    env
}

fn round_trip(env: &Envelope) -> Envelope {
    let attrs = to_attributes(env);
    from_attributes(
        attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        env.payload.clone(),
    )
    .unwrap()
}

#[test]
fn full_envelope_round_trips_exactly() {
    let env = full_envelope();
    assert_eq!(round_trip(&env), env);
}

#[test]
fn minimal_envelope_round_trips_exactly() {
    let env = Envelope::new("r", "d", "t", Bytes::new(), "text/plain");
    assert_eq!(round_trip(&env), env);
}

#[test]
fn attributes_use_cloudevents_names() {
    let attrs = to_attributes(&full_envelope());
    assert_eq!(attrs["ce-specversion"], "1.0");
    assert_eq!(attrs["ce-type"], "order.placed");
    assert_eq!(attrs["ce-source"], "order-events");
    assert_eq!(attrs["ce-partitionkey"], "order-1");
    assert_eq!(attrs["traceparent"], "00-abc-def-01");
    assert!(attrs["ce-time"].ends_with('Z'));
}

#[test]
fn reserved_headers_do_not_override_fields() {
    let mut env = full_envelope();
    env.headers.insert("ce-id".into(), "forged".into());
    let attrs = to_attributes(&env);
    assert_eq!(attrs["ce-id"], env.event_id.to_string());
}

#[test]
fn missing_and_invalid_attributes_are_reported() {
    let attrs = to_attributes(&full_envelope());
    let without = |skip: &str| {
        let pairs = attrs
            .iter()
            .filter(|(k, _)| k.as_str() != skip)
            .map(|(k, v)| (k.as_str(), v.as_str()));
        from_attributes(pairs, Bytes::new())
    };
    assert_eq!(
        without("ce-id").unwrap_err(),
        AttributeError::Missing("ce-id")
    );
    assert_eq!(
        without("ce-type").unwrap_err(),
        AttributeError::Missing("ce-type")
    );

    let mut bad = attrs.clone();
    bad.insert("ce-time".into(), "yesterday".into());
    let err = from_attributes(
        bad.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        Bytes::new(),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        AttributeError::Invalid {
            name: "ce-time",
            ..
        }
    ));
}

/// An event of another producer, in the AMQP binding's spelling, with
/// an id that is not a UUID, an offset time and extensions.
const FOREIGN: [(&str, &str); 8] = [
    ("cloudEvents:specversion", "1.0"),
    ("cloudEvents:id", "A234-1234-1234"),
    ("cloudEvents:source", "/mycontext"),
    ("cloudEvents:type", "com.example.someevent"),
    ("cloudEvents:time", "2018-04-05T19:00:00+02:00"),
    ("cloudEvents:subject", "larger-context"),
    ("cloudEvents:traceparent", "00-a-b-01"),
    ("x-app", "kept"),
];

#[test]
fn foreign_binary_events_are_read() {
    let env = from_message(FOREIGN, Bytes::from_static(b"x")).unwrap();
    assert_eq!(env.event_id, event_id_for("/mycontext", "A234-1234-1234"));
    assert_eq!(env.event_type, "com.example.someevent");
    assert_eq!(env.route, "/mycontext");
    assert_eq!(
        env.occurred_at,
        foreign::parse_time("2018-04-05T17:00:00Z").unwrap()
    );
    assert_eq!(env.content_type, crate::codec::RAW_CONTENT_TYPE);
    let headers: Vec<_> = env
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        headers,
        [
            ("ce-id", "A234-1234-1234"),
            ("ce-subject", "larger-context"),
            ("traceparent", "00-a-b-01"),
            ("x-app", "kept"),
        ]
    );
}

#[test]
fn a_missing_time_reads_as_now() {
    let before = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    let without = FOREIGN.into_iter().filter(|(k, _)| !k.ends_with("time"));
    let env = from_message(without, Bytes::new()).unwrap();
    assert!(env.occurred_at >= before);
}

#[test]
fn structured_bodies_are_read_by_content_type_or_shape() {
    let body = br#"{"specversion":"1.0","id":"1","source":"s","type":"t","data":{"a":1}}"#;
    let by_type = [("content-type", STRUCTURED_CONTENT_TYPE)];
    let env = from_message(by_type, Bytes::from_static(body)).unwrap();
    assert_eq!(&env.payload[..], br#"{"a":1}"#);
    let by_shape = from_message([], Bytes::from_static(body)).unwrap();
    assert_eq!(by_shape.event_id, env.event_id);
    let binary = [("content-type", "application/json")];
    assert_eq!(
        from_message(binary, Bytes::from_static(body)).unwrap_err(),
        AttributeError::Missing("ce-specversion")
    );
}

#[test]
fn the_expiry_travels_as_rfc3339_and_a_malformed_one_is_refused() {
    let env = full_envelope();
    let attrs = to_attributes(&env);
    let at = &attrs["tidings-expires-at"];
    assert!(at.ends_with('Z') && at.contains('T'), "{at}");
    let mut attrs = attrs.clone();
    attrs.insert("tidings-expires-at".into(), "tomorrow".into());
    let refused = from_attributes(
        attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        env.payload.clone(),
    );
    assert!(matches!(
        refused,
        Err(AttributeError::Invalid {
            name: "tidings-expires-at",
            ..
        })
    ));
}
