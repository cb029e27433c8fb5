//! The claim statements as rendered: placeholders, parameters, places.

use tidings_core::{ClaimCursor, OutboxSpec};

use super::*;

static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events").destination("q");

#[test]
fn the_limit_is_written_in_and_every_placeholder_filled() {
    let names = TableNames::new("s", "o", "i").expect("valid names");
    let claims = ClaimStatements::new(&names);
    let route = EVENTS.route();
    let sql = claims.get(route, 250, ClaimMode::Leased, None);
    assert!(sql.as_str().contains("limit 250"), "{}", sql.as_str());
    assert!(!sql.as_str().contains('{'), "{}", sql.as_str());
    assert!(!sql.as_str().contains("slot"), "{}", sql.as_str());
    assert_eq!(
        claims.get(route, 250, ClaimMode::Leased, None).as_str(),
        sql.as_str()
    );
    let skipping = claims.get(route, 250, ClaimMode::Leased, Some(2));
    assert!(skipping.as_str().contains("and r.slot <> 2"));
    assert!(skipping.as_str().contains("and o.slot <> 2"));
    let locked = claims.locked(route, 250, Some(3));
    assert!(locked.as_str().contains("and r.slot <> 3"));
    assert!(locked.as_str().contains("and r.id + 0 > $2"));
    assert!(!sql.as_str().contains("r.id + 0 >"), "{}", sql.as_str());
    assert!(Kind::of(route, ClaimMode::Locked).takes_cursor());
    assert!(!Kind::of(route, ClaimMode::Locked).walks_keys());
    assert!(!Kind::of(route, ClaimMode::Leased).takes_cursor());
    assert_eq!(
        Kind::of(route, ClaimMode::Locked).takes_cursor(),
        ClaimCursor::fits(route)
    );
    let largest = claims.get(route, usize::MAX, ClaimMode::Leased, None);
    assert!(largest.as_str().contains(&format!("limit {}\n", i64::MAX)));
    for limit in 0..2 * KEPT {
        assert!(
            claims
                .get(route, limit, ClaimMode::Leased, None)
                .as_str()
                .contains(&format!("limit {limit}\n"))
        );
    }
}

#[test]
fn a_per_key_claim_binds_its_key_cursor_after_the_other_parameters() {
    static KEYED: OutboxSpec<u32> = OutboxSpec::json("keyed").destination("q").per_key();
    let names = TableNames::new("s", "o", "i").expect("valid names");
    let claims = ClaimStatements::new(&names);
    let route = KEYED.route();
    let locked = claims.locked(route, 10, Some(1));
    let leased = claims.get(route, 10, ClaimMode::Leased, None);
    assert!(locked.as_str().contains("$2::text"), "{}", locked.as_str());
    assert!(leased.as_str().contains("$5::text"), "{}", leased.as_str());
    for alias in ["x", "h", "o"] {
        assert!(locked.as_str().contains(&format!("and {alias}.slot <> 1")));
    }
    assert!(!leased.as_str().contains("slot"), "{}", leased.as_str());
    // Only a locked claim takes a place, of one by default.
    let gate = "generate_series(0, 20 * 1 - 1) as attempt";
    assert!(locked.as_str().contains(gate), "{}", locked.as_str());
    assert!(
        locked
            .as_str()
            .contains(r#"'tidings claims "s"."o" ' || $1"#)
    );
    assert!(!leased.as_str().contains("advisory"), "{}", leased.as_str());
    let two = ClaimStatements::new(&names).per_key_claims(2);
    let by_clock = Route {
        hlc_ordering: true,
        ..route.clone()
    };
    let locked = two.locked(&by_clock, 10, None);
    assert!(
        locked
            .as_str()
            .contains("generate_series(0, 20 * 2 - 1) as attempt")
    );
    let unordered = two.locked(EVENTS.route(), 10, None);
    assert!(!unordered.as_str().contains("advisory"));
    assert!(Kind::of(route, ClaimMode::Leased).walks_keys());
    let keys = KeyCursors::default();
    let from = ClaimFrom::of(route, ClaimMode::Locked, Some(7), &keys);
    assert_eq!(from, ClaimFrom::Key(String::new()));
    let from = ClaimFrom::of(EVENTS.route(), ClaimMode::Locked, None, &keys);
    assert_eq!(from, ClaimFrom::Row(i64::MIN));
    let from = ClaimFrom::of(EVENTS.route(), ClaimMode::Leased, Some(7), &keys);
    assert_eq!(from, ClaimFrom::Oldest);
}

#[test]
fn the_idle_bound_is_the_lease_in_whole_milliseconds() {
    let sql = begin_statement;
    assert_eq!(
        sql(Duration::from_secs(30)),
        "begin; set local idle_in_transaction_session_timeout = 30000"
    );
    assert!(sql(Duration::ZERO).ends_with("= 1"));
    assert!(sql(Duration::MAX).ends_with(&format!("= {}", i32::MAX)));
}

#[test]
fn each_claim_is_written_around_each_selection() {
    let names = TableNames::new("s", "o", "i").expect("valid names");
    let claims = ClaimStatements::new(&names);
    for (index, template) in claims.templates.iter().enumerate() {
        let mut sql = template
            .replace("{limit}", "7")
            .replace("{after}", "")
            .replace("{key_after}", "$9")
            .replace("{gate}", "true");
        for skip in [
            "{skip}",
            "{skip_target}",
            "{skip_o}",
            "{skip_h}",
            "{skip_x}",
        ] {
            sql = sql.replace(skip, "");
        }
        assert!(!sql.contains('{'), "{sql}");
        // A per-key claim in staging order locks the keys' heads as it
        // walks them; the others lock what they select.
        let walks = index % 4 == 2;
        assert_eq!(sql.contains("with recursive"), walks, "{sql}");
        assert_eq!(sql.contains("$9::text"), walks, "{sql}");
        let locks = sql.contains("limit 7\nfor update of r skip locked");
        assert_eq!(locks, !walks, "{sql}");
        assert_eq!(sql.contains("with picked"), index < 4, "{sql}");
        assert_eq!(sql.contains("not exists"), index % 4 >= 2, "{sql}");
        assert_eq!(sql.contains("r.hlc nulls first"), index % 2 == 1, "{sql}");
        // The selection's heading stays out; only the claim's own heads it.
        let headings = ["-- The rows a claim takes", "-- As claimable"];
        let inner = sql
            .lines()
            .filter(|l| headings.iter().any(|h| l.starts_with(h)));
        assert_eq!(inner.count(), 0, "{sql}");
    }
}
