use super::*;

#[test]
fn legal_names_pass() {
    for name in [
        "orders",
        "a",
        "orders.v1",
        "shop_orders-2",
        &"x".repeat(249),
    ] {
        assert!(validate_topic(name).is_ok(), "{name}");
    }
}

#[test]
fn hostile_names_are_refused() {
    for name in [
        "",
        ".",
        "..",
        "orders events",
        "orders/../x",
        "ördners",
        "a\0b",
        "a\nb",
        "*",
        &"x".repeat(250),
    ] {
        assert!(validate_topic(name).is_err(), "{name:?}");
    }
}

#[test]
fn companions_must_fit_too() {
    assert!(validate_with_companions(&"x".repeat(240)).is_ok());
    assert!(validate_with_companions(&"x".repeat(245)).is_err());
    assert_eq!(retry_topic("orders"), "orders.retry");
    assert_eq!(dead_letter_topic("orders"), "orders.dlt");
}
