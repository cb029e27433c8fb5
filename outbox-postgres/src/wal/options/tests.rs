use super::*;

#[test]
fn a_url_gives_every_part_of_the_connection() {
    let options =
        WalOptions::new("postgres://re%40lay:p%2Fss@db.internal:6543/shop?sslmode=require")
            .unwrap();
    let t = &options.target;
    assert_eq!((t.host.as_str(), t.port), ("db.internal", 6543));
    assert_eq!((t.user.as_str(), t.password.as_str()), ("re@lay", "p/ss"));
    assert_eq!(t.database, "shop");
}

#[test]
fn urls_that_cannot_reach_a_database_are_refused() {
    for bad in [
        "mysql://h/db",
        "postgres://h",
        "postgres://h/db?sslmode=prefer-maybe",
        "not a url",
    ] {
        let err = WalOptions::new(bad).unwrap_err();
        assert!(err.to_string().contains("replication URL"), "{bad}: {err}");
    }
}
