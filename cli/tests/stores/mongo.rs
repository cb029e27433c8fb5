//! `tidings --store mongo` as a process on the MongoDB stand-in: indexes
//! verified, status of three routes, failed rows requeued by filter, a
//! purge run dry then for real, whether a consumer handled an event, and
//! every route listed once its documents are gone.

use crate::support::{
    INVOICES, ORDERS, REFUNDS, json, mark_handled, mongo_store, on_mongo, settle, stage, stdout,
};
use tidings_core::OutboxStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_see_and_mend_a_mongo_outbox() {
    let store = mongo_store().await;
    let database = store.database().name().to_owned();
    assert_eq!(
        stdout(on_mongo(&database).arg("verify")).trim(),
        "schema is up to date"
    );
    let ids = stage(
        &store,
        &ORDERS,
        &["order.placed", "order.cancelled", "order.placed"],
    )
    .await;
    settle(&store, &ORDERS, &ids[..2], "poison").await;
    stage(&store, &INVOICES, &["invoice.sent"; 2]).await;
    stage(&store, &REFUNDS, &["refund.issued"]).await;

    let status = json(on_mongo(&database).arg("status"));
    let routes: Vec<_> = status["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["route"].clone())
        .collect();
    assert_eq!(
        routes,
        ["invoice-events", "order-events", "refund-events"],
        "{status}"
    );
    assert_eq!(status["routes"][1]["failed"], 2);
    assert_eq!(status["routes"][0]["pending"], 2);

    let requeued = stdout(on_mongo(&database).args([
        "failed",
        "requeue",
        "--route",
        "order-events",
        "--event-type",
        "order.cancelled",
    ]));
    assert_eq!(requeued.trim(), "requeued 1 failed rows of order-events");
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (1, 1));

    let purge = ["purge", "--route", "order-events", "--status", "failed"];
    let dry = stdout(on_mongo(&database).args(purge).arg("--dry-run"));
    assert_eq!(
        dry.trim(),
        "would delete 1 rows of order-events (dry run, nothing deleted)"
    );
    assert_eq!(store.stats("order-events").await.unwrap().failed, 1);
    let done = stdout(on_mongo(&database).args(purge));
    assert_eq!(done.trim(), "deleted 1 rows of order-events");
    assert_eq!(store.stats("order-events").await.unwrap().failed, 0);

    mark_handled(&store.inbox(), "billing", &[ids[2]]).await;
    let show = |id: uuid::Uuid| {
        let mut command = on_mongo(&database);
        command.args(["inbox", "show", "--consumer", "billing", "--event-id"]);
        command.arg(id.to_string());
        command
    };
    let shown = json(&mut show(ids[2]));
    assert_eq!(shown["handled"], true, "{shown}");
    let output = show(ids[0]).arg("--json").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let missing: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(missing["handled"], false, "{missing}");

    store
        .outbox()
        .delete_many(Default::default())
        .await
        .unwrap();
    let status = json(on_mongo(&database).arg("status"));
    let routes = status["routes"].as_array().unwrap();
    assert_eq!(
        routes.len(),
        3,
        "routes kept once their rows are gone: {status}"
    );
    assert!(routes.iter().all(|r| r["pending"] == 0), "{status}");
    store.database().drop().await.unwrap();
}
