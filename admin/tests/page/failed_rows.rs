//! Failed rows one by one: each listed with its reason, one opened, one
//! selected and deleted after its dry-run preview and a confirmation, the
//! other left alone.

use tidings_core::{FailedFilter, OutboxAdmin, OutboxStore};

use crate::support::{
    Driver, TOKEN, click, count, drop_store, enter_token, quick_page, screenshot, seeded_store,
    serve, text_of, wait_failed_rows, wait_for, wait_text,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selected_failed_row_is_deleted_after_its_preview() {
    let store = seeded_store(3, 2).await;
    let rows = store
        .failed("order-events", &FailedFilter::default())
        .await
        .unwrap();
    let (doomed, kept) = (rows[0].event_id, rows[1].event_id);
    let address = serve(quick_page(store.clone()).token(TOKEN)).await;
    let driver = Driver::start();
    let client = driver.client().await;
    client.goto(&format!("http://{address}/")).await.unwrap();

    wait_failed_rows(&client, 2).await;
    wait_text(&client, "#health", "2 failed rows").await;
    wait_text(&client, "#routes tbody tr.bad td.health", "2 failed").await;
    wait_text(&client, "#failed tbody", "no exchange 'orders' (attempt 0)").await;
    click(&client, &format!("#open-failed-{doomed}")).await;
    wait_text(&client, "#failed-detail", "order.placed").await;
    wait_for(
        &client,
        "return document.querySelector('#failed-detail pre.payload').textContent.length > 0",
    )
    .await;
    screenshot(&client, "console-failed-rows.png").await;

    enter_token(&client).await;
    click(&client, &format!("#sel-failed-{doomed}")).await;
    wait_text(&client, "#failed-selected", "1 selected").await;
    click(&client, "#failed-delete").await;
    wait_for(&client, "return document.getElementById('confirm').open").await;
    wait_text(&client, "#confirm-title", "Delete 1 failed rows?").await;
    assert!(
        text_of(&client, "#confirm-list")
            .await
            .contains(&doomed.to_string())
    );
    assert_eq!(count(&client, "#confirm-list li").await, 1);
    assert_eq!(
        store.stats("order-events").await.unwrap().failed,
        2,
        "a preview changes nothing"
    );

    click(&client, "#confirm-ok").await;
    wait_text(&client, "#message", "deleted 1 of 1 failed rows").await;
    wait_failed_rows(&client, 1).await;
    let left = store
        .failed("order-events", &FailedFilter::default())
        .await
        .unwrap();
    assert_eq!(left.iter().map(|r| r.event_id).collect::<Vec<_>>(), [kept]);
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (3, 1));

    click(&client, &format!("#sel-failed-{kept}")).await;
    click(&client, "#failed-requeue").await;
    wait_for(&client, "return document.getElementById('confirm').open").await;
    click(&client, "#confirm-cancel").await;
    wait_text(&client, "#message", "cancelled: nothing changed").await;
    assert_eq!(store.stats("order-events").await.unwrap().failed, 1);

    client.close().await.unwrap();
    drop_store(&store).await;
}
