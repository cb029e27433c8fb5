//! A page started without a token shows no write control at all, and its
//! write API refuses.

use tidings_core::{OutboxAdmin, OutboxStore};

use crate::support::{
    Driver, count, drop_store, http, quick_page, screenshot, seeded_store, serve, text_of,
    wait_failed_rows, wait_text,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_page_shows_no_write_controls() {
    let store = seeded_store(1, 2).await;
    let address = serve(quick_page(store.clone())).await;
    let driver = Driver::start();
    let client = driver.client().await;
    client.goto(&format!("http://{address}/")).await.unwrap();

    wait_failed_rows(&client, 2).await;
    wait_text(&client, "#read-only", "read-only").await;
    for control in [
        "button:not(.link):not(#failed-detail-close)",
        "input",
        ".write",
        "#token",
    ] {
        assert_eq!(
            count(&client, &format!("main {control}, header {control}")).await,
            0,
            "{control}"
        );
    }
    assert_eq!(
        count(&client, "#failed tbody input[type=checkbox]").await,
        0
    );
    assert!(
        text_of(&client, "#failed tbody")
            .await
            .contains("no exchange 'orders'")
    );
    screenshot(&client, "console-read-only.png").await;

    let id = store
        .failed("order-events", &Default::default())
        .await
        .unwrap()[0]
        .event_id;
    let body = format!(r#"{{"route":"order-events","ids":["{id}"]}}"#);
    let (status, answer) = http(
        address,
        "POST",
        "/api/failed/delete",
        Some(&body),
        Some("guess"),
    )
    .await;
    assert!(status.contains(" 401 "), "{status}");
    assert!(answer.contains("read-only"), "{answer}");
    assert_eq!(store.stats("order-events").await.unwrap().failed, 2);

    client.close().await.unwrap();
    drop_store(&store).await;
}
