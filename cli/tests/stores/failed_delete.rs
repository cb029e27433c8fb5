//! `tidings failed delete` on the real PostgreSQL server: a dry run shows
//! the rows and changes nothing, a run without a terminal refuses without
//! `--yes`, a run with it deletes exactly the failed rows named, and a
//! named row that is not failed stops it before anything goes.

use crate::support::{ORDERS, drop_schema, json, on_postgres, pg_store, settle, stage};
use predicates::str::contains;
use tidings_core::OutboxStore;

#[tokio::test]
async fn failed_rows_are_deleted_by_id_after_a_preview_and_a_yes() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let ids = stage(&store, &ORDERS, &["order.placed"; 3]).await;
    settle(&store, &ORDERS, &ids[..2], "poison: total is negative").await;
    let pending = stage(&store, &ORDERS, &["order.placed"]).await[0];
    let doomed = ids[0].to_string();
    let delete = ["failed", "delete", "--route", "order-events", "--id"];

    let dry = json(
        on_postgres(&schema)
            .args(delete)
            .args([&doomed, "--dry-run"]),
    );
    assert_eq!(
        (dry["matched"].as_u64(), dry["deleted"].as_u64()),
        (Some(1), Some(0)),
        "{dry}"
    );
    assert_eq!(dry["ids"][0], doomed.as_str());
    assert_eq!(store.stats("order-events").await.unwrap().failed, 2);

    on_postgres(&schema)
        .args(delete)
        .arg(&doomed)
        .assert()
        .failure()
        .stderr(contains("pass --yes"));
    assert_eq!(store.stats("order-events").await.unwrap().failed, 2);

    on_postgres(&schema)
        .args(delete)
        .args([&ids[1].to_string(), "--id", &pending.to_string(), "--yes"])
        .assert()
        .failure()
        .stderr(contains(format!("no failed row {pending}")));
    assert_eq!(store.stats("order-events").await.unwrap().failed, 2);

    let done = json(on_postgres(&schema).args(delete).args([&doomed, "--yes"]));
    assert_eq!(done["deleted"].as_u64(), Some(1), "{done}");
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.failed, stats.pending, stats.published), (1, 1, 1));
    drop_schema(&store).await;
}
