use super::*;

#[test]
fn names_and_prefixes_match_in_any_case() {
    for name in [
        "CC",
        "bcc",
        "Bcc",
        "X-DEATH",
        "x-First-Death-Queue",
        "x-last-death-reason",
        "x-delivery-count",
        "X-Tidings-Prior-Deliveries",
        "x-dead-letter-reason",
        "Content-Type",
        "ce-id",
        "CE-Anything",
        "tidings-hlc",
    ] {
        assert!(owner_of(name).is_some(), "{name}");
    }
}

#[test]
fn application_names_pass() {
    for name in [
        "traceparent",
        "tracestate",
        "x-request-id",
        "x-custom",
        "ccc",
        "x-deaths",
        "x-first-death",
        "cex-id",
        "tidings",
    ] {
        assert!(owner_of(name).is_none(), "{name}");
    }
}

#[test]
fn owners_are_named() {
    assert_eq!(owner_of("cc"), Some(&RABBITMQ));
    assert_eq!(owner_of("x-tidings-prior-deliveries"), Some(&CONSUMER));
    assert_eq!(owner_of("ce-time"), Some(&ENVELOPE));
}
