use super::*;

#[test]
fn names_default_from_the_table() {
    let tailing = Tailing::new(&LogTailing::table(), "shop", "orders").unwrap();
    assert_eq!(tailing.slot, "orders_slot");
    assert_eq!(tailing.publication, "orders_publication");
    assert_eq!(tailing.prefix, "tidings:shop.orders");
}

#[test]
fn hostile_slot_and_publication_names_are_refused() {
    let long = "s".repeat(64);
    for bad in [
        "",
        "Slot",
        "a b",
        "x' , proto_version '2",
        "a-b",
        "ünï",
        long.as_str(),
    ] {
        let err = Tailing::new(&LogTailing::messages().slot(bad), "public", "t").unwrap_err();
        assert!(err.to_string().contains("replication slot name"), "{err}");
        let err = Tailing::new(&LogTailing::table().publication(bad), "public", "t").unwrap_err();
        assert!(err.to_string().contains("publication name"), "{err}");
    }
}
