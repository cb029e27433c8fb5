//! `tidings` as a process on the real PostgreSQL server: status of three
//! routes, failed rows listed, shown and requeued by filter, a purge run
//! dry then for real, the inbox purged, a plain outbox converted to the
//! rotated layout, and bad input refused clearly.

use crate::support;

use predicates::prelude::*;
use predicates::str::contains;
use support::{
    INVOICES, ORDERS, REFUNDS, drop_schema, json, mark_handled, on_postgres, pg_store, settle,
    stage, stdout,
};
use tidings_core::OutboxStore;

#[tokio::test]
async fn status_shows_every_route_and_the_inbox() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let orders = stage(&store, &ORDERS, &["order.placed"; 4]).await;
    settle(&store, &ORDERS, &orders[..1], "broker refused").await;
    stage(&store, &INVOICES, &["invoice.sent"; 2]).await;
    stage(&store, &REFUNDS, &["refund.issued"]).await;
    stage(&store, &ORDERS, &["order.placed"; 2]).await;
    mark_handled(&store.inbox(), "billing", &[orders[1]]).await;

    let status = json(on_postgres(&schema).arg("status"));
    let routes = status["routes"].as_array().unwrap();
    let row = |name: &str| routes.iter().find(|r| r["route"] == name).unwrap().clone();
    assert_eq!(routes.len(), 3, "{status}");
    let orders_row = row("order-events");
    assert_eq!(
        (
            &orders_row["pending"],
            &orders_row["failed"],
            &orders_row["retained"]
        ),
        (&2.into(), &1.into(), &3.into()),
        "{status}"
    );
    assert_eq!(row("invoice-events")["pending"], 2);
    assert_eq!(row("refund-events")["pending"], 1);
    assert!(orders_row["oldest_pending_secs"].as_f64().is_some());
    assert_eq!(status["consumers"][0]["consumer"], "billing");
    assert_eq!(status["consumers"][0]["marks"], 1);

    let table = stdout(on_postgres(&schema).arg("status"));
    for text in [
        "ROUTE",
        "order-events",
        "invoice-events",
        "refund-events",
        "billing",
    ] {
        assert!(table.contains(text), "{text} missing from:\n{table}");
    }
    drop_schema(&store).await;
}

#[tokio::test]
async fn failed_rows_are_listed_shown_and_requeued_by_filter() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let ids = stage(
        &store,
        &ORDERS,
        &["order.placed", "order.placed", "order.cancelled"],
    )
    .await;
    settle(&store, &ORDERS, &ids, "poison: total is negative").await;

    let listed = json(on_postgres(&schema).args(["failed", "list", "--route", "order-events"]));
    assert_eq!(listed.as_array().unwrap().len(), 3);
    let shown = stdout(on_postgres(&schema).args([
        "failed",
        "show",
        "--route",
        "order-events",
        &ids[2].to_string(),
    ]));
    assert!(
        shown.contains("order.cancelled") && shown.contains("poison: total is negative"),
        "{shown}"
    );

    let requeue = ["failed", "requeue", "--route", "order-events"];
    let placed = ["--event-type", "order.placed"];
    let dry = stdout(
        on_postgres(&schema)
            .args(requeue)
            .args(placed)
            .arg("--dry-run"),
    );
    assert_eq!(dry.trim(), "would requeue 2 failed rows of order-events");
    assert_eq!(store.stats("order-events").await.unwrap().failed, 3);
    let done = stdout(on_postgres(&schema).args(requeue).args(placed));
    assert_eq!(done.trim(), "requeued 2 failed rows of order-events");
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (2, 1));
    let left = json(on_postgres(&schema).args(["failed", "list", "--route", "order-events"]));
    assert_eq!(left[0]["event_id"], ids[2].to_string());
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_purge_runs_dry_then_for_real() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let types = ["order.placed"; 25];
    let ids = stage(&store, &ORDERS, &types).await;
    settle(&store, &ORDERS, &ids[..5], "poison").await;
    let purge = [
        "purge",
        "--route",
        "order-events",
        "--status",
        "published",
        "--batch",
        "7",
    ];

    let dry = stdout(on_postgres(&schema).args(purge).arg("--dry-run"));
    assert_eq!(
        dry.trim(),
        "would delete 20 rows of order-events (dry run, nothing deleted)"
    );
    assert_eq!(store.stats("order-events").await.unwrap().published, 20);
    let kept = stdout(
        on_postgres(&schema)
            .args(purge)
            .args(["--older-than", "1h"]),
    );
    assert_eq!(kept.trim(), "deleted 0 rows of order-events");
    let done = json(on_postgres(&schema).args(purge));
    assert_eq!(
        (&done["matched"], &done["deleted"]),
        (&20.into(), &20.into())
    );
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.published, stats.failed), (0, 5));
    drop_schema(&store).await;
}

#[tokio::test]
async fn the_inbox_of_one_consumer_is_purged() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let ids = stage(&store, &ORDERS, &["order.placed"; 3]).await;
    mark_handled(&store.inbox(), "billing", &ids).await;
    mark_handled(&store.inbox(), "shipping", &ids[..1]).await;

    let kept = stdout(on_postgres(&schema).args([
        "inbox",
        "purge",
        "--consumer",
        "billing",
        "--older-than",
        "1h",
    ]));
    assert_eq!(kept.trim(), "deleted 0 inbox rows of billing");
    let done = stdout(on_postgres(&schema).args([
        "inbox",
        "purge",
        "--consumer",
        "billing",
        "--older-than",
        "0s",
    ]));
    assert_eq!(done.trim(), "deleted 3 inbox rows of billing");
    let status = json(on_postgres(&schema).arg("status"));
    assert_eq!(status["consumers"].as_array().unwrap().len(), 1, "{status}");
    assert_eq!(status["consumers"][0]["consumer"], "shipping");
    drop_schema(&store).await;
}

#[tokio::test]
async fn bad_input_fails_with_a_clear_message_and_the_right_code() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let ids = stage(&store, &ORDERS, &["order.placed"]).await;
    settle(&store, &ORDERS, &ids, "poison").await;

    on_postgres(&schema)
        .args(["failed", "requeue", "--route", "orders-events", "--all"])
        .assert()
        .code(1)
        .stderr(contains("unknown route \"orders-events\"").and(contains("order-events")));
    let id = ids[0].to_string();
    let unknown = uuid::Uuid::new_v4().to_string();
    let no_row = format!("no failed row {unknown}");
    let show_bad_id = [
        "failed",
        "show",
        "--route",
        "order-events",
        "0190c8f2-not-a-uuid",
    ];
    let partial = [
        "failed",
        "requeue",
        "--route",
        "order-events",
        "--id",
        &id,
        "--id",
        &unknown,
    ];
    let stale = [
        "inbox",
        "purge",
        "--consumer",
        "nobody",
        "--older-than",
        "1d",
    ];
    let refusals: [(&str, &[&str], i32, &str); 7] = [
        (
            &schema,
            &show_bad_id,
            2,
            "invalid value '0190c8f2-not-a-uuid'",
        ),
        (&schema, &partial, 1, &no_row),
        (
            &schema,
            &["failed", "requeue", "--route", "order-events"],
            2,
            "--all",
        ),
        (
            &schema,
            &["purge", "--route", "order-events", "--status", "gone"],
            2,
            "possible values: published, failed",
        ),
        (
            "tidings_cli_missing_schema",
            &["status"],
            1,
            "tidings migrate",
        ),
        ("bad\"name", &["status"], 1, "schema"),
        (&schema, &stale, 1, "unknown consumer \"nobody\""),
    ];
    for (in_schema, args, code, refusal) in refusals {
        on_postgres(in_schema)
            .args(args)
            .assert()
            .code(code)
            .stderr(contains(refusal));
    }
    assert_eq!(
        store.stats("order-events").await.unwrap().failed,
        1,
        "a partial requeue ran"
    );
    drop_schema(&store).await;
}

#[tokio::test]
async fn migrate_rotated_converts_a_plain_outbox_keeping_its_rows() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    stage(&store, &ORDERS, &["order.placed"; 3]).await;

    on_postgres(&schema)
        .args(["migrate", "--rotated"])
        .assert()
        .success();
    on_postgres(&schema)
        .args(["verify", "--rotated"])
        .assert()
        .success();
    on_postgres(&schema)
        .arg("verify")
        .assert()
        .code(1)
        .stderr(contains("Layout::Rotated"));
    let status = json(on_postgres(&schema).args(["status", "--rotated"]));
    assert_eq!(status["routes"][0]["pending"], 3, "{status}");
    drop_schema(&store).await;
}

#[test]
fn every_command_has_useful_help() {
    for args in [
        &["--help"][..],
        &["status", "--help"],
        &["failed", "--help"],
        &["failed", "requeue", "--help"],
        &["purge", "--help"],
        &["inbox", "purge", "--help"],
        &["dead-letters", "--help"],
        &["dead-letters", "replay", "--help"],
        &["serve", "--help"],
    ] {
        let text = stdout(support::tidings().args(args));
        assert!(text.contains("Usage: tidings"), "{args:?}: {text}");
    }
    let top = stdout(support::tidings().arg("--help"));
    assert!(top.contains("Exit codes: 0 done, 1"), "{top}");
}
