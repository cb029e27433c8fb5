use super::*;

fn envelope() -> Envelope {
    let mut env = Envelope::new(
        "r",
        "orders",
        "order.placed",
        Bytes::from_static(b"{}"),
        "application/json",
    );
    env.correlation_id = Some("corr".into());
    env.headers.insert("traceparent".into(), "00-a-b-01".into());
    env
}

#[test]
fn envelope_round_trips_through_properties() {
    let env = envelope();
    let props = encode(&env, 131_072).unwrap();
    assert_eq!(
        props.message_id().as_ref().unwrap().as_str(),
        env.event_id.to_string()
    );
    assert_eq!(props.kind().as_ref().unwrap().as_str(), "order.placed");
    assert_eq!(*props.delivery_mode(), Some(PERSISTENT));
    assert_eq!(decode(&props, env.payload.clone()).unwrap(), env);
}

#[test]
fn long_header_names_are_refused_with_a_reason() {
    let mut env = envelope();
    env.headers.insert("h".repeat(300), "v".into());
    let err = encode(&env, 131_072).unwrap_err();
    assert!(
        matches!(&err, PublishError::Invalid { reason } if reason.contains("header name")),
        "{err}"
    );
}

#[test]
fn headers_larger_than_a_frame_are_refused() {
    let mut env = envelope();
    env.headers.insert("big".into(), "v".repeat(200_000));
    let err = encode(&env, 131_072).unwrap_err();
    assert!(
        matches!(&err, PublishError::Invalid { reason } if reason.contains("frame")),
        "{err}"
    );
}

#[test]
fn broker_headers_stay_out_of_the_envelope() {
    let env = envelope();
    let mut props = encode(&env, 131_072).unwrap();
    let mut headers = props.headers().clone().unwrap();
    headers.insert(QUORUM_DELIVERY_COUNT.into(), AMQPValue::LongLongInt(2));
    headers.insert(
        "x-first-death-reason".into(),
        AMQPValue::LongString("expired".into()),
    );
    for name in [
        tidings_core::FIRST_FAILURE_HEADER,
        tidings_core::PARKED_AT_HEADER,
        tidings_core::PARKED_DELIVERIES_HEADER,
    ] {
        headers.insert(name.into(), AMQPValue::LongString("1700000000000".into()));
    }
    props = props.with_headers(headers);
    assert_eq!(decode(&props, env.payload.clone()).unwrap(), env);
}
