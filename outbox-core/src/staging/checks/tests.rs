use crate::staging::tests::{SPEC, buffer};

use super::*;

/// What taking a buffer gives that holds one event with the header
/// `name: value`.
fn take_with_header(name: &str, value: &str) -> Result<Vec<StagedEvent>, StageError> {
    let mut buf = buffer();
    buf.stage(&SPEC, "t", &1).unwrap().header(name, value);
    buf.take()
}

#[test]
fn bad_options_fail_at_take() {
    let reserved = [
        ("ce-id", "x"),
        ("tidings-hlc", "1"),
        ("Content-Type", "x"),
        ("CC", "x"),
        ("x-delivery-count", "42"),
        ("X-Tidings-Prior-Deliveries", "99"),
        ("x-death", "x"),
        ("x-last-death-queue", "q"),
    ];
    for (name, value) in reserved {
        assert!(
            matches!(
                take_with_header(name, value),
                Err(StageError::ReservedHeader { .. })
            ),
            "{name}"
        );
    }
    let long = "v".repeat(MAX_HEADER_VALUE_LEN + 1);
    let invalid = [
        ("a b", "x"),
        ("", "x"),
        ("ok", "line\nbreak"),
        ("ok", "\u{fffe}"),
        ("ok", long.as_str()),
    ];
    for (name, value) in invalid {
        assert!(
            matches!(
                take_with_header(name, value),
                Err(StageError::Header { .. })
            ),
            "{name:?}"
        );
    }
    let mut buf = buffer();
    buf.stage(&SPEC, "t", &1)
        .unwrap()
        .ordering_key("k".repeat(129));
    assert!(matches!(buf.take(), Err(StageError::OrderingKey(_))));
}

#[test]
fn reserved_headers_name_their_owner() {
    let err = take_with_header("BCC", "x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "header \"BCC\" is reserved: RabbitMQ gives it a meaning, as the broker routes by them, \
         counts deliveries in them or records dead-lettering in them"
    );
}

#[test]
fn headers_may_not_take_more_than_their_share_together() {
    let mut buf = buffer();
    let value = "v".repeat(MAX_HEADER_VALUE_LEN - 1);
    let mut staged = buf.stage(&SPEC, "t", &1).unwrap();
    for name in ["a", "b"] {
        staged = staged.header(name, value.clone());
    }
    assert!(buf.take().is_ok(), "two full values fit");
    let mut staged = buf.stage(&SPEC, "t", &1).unwrap();
    for name in ["a", "b", "c"] {
        staged = staged.header(name, value.clone());
    }
    assert!(matches!(buf.take(), Err(StageError::Headers { .. })));
}
