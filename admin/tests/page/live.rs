//! A healthy pipeline: the context, the health badge, the refresh that
//! keeps the page current, and the backlog chart drawn from the server's
//! samples.

use std::time::Duration;

use serde_json::Value;

use crate::support::{
    Driver, count, drop_store, eval, quick_page, screenshot, seeded_store, serve, stage, text_of,
    wait_for, wait_text,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_console_refreshes_itself_and_charts_a_growing_backlog() {
    let store = seeded_store(0, 0).await;
    stage(&store, 1).await;
    let schema = store.options().get_schema().to_owned();
    let address = serve(quick_page(store.clone()).metrics(String::new)).await;
    let driver = Driver::start();
    let client = driver.client().await;
    client.goto(&format!("http://{address}/")).await.unwrap();

    wait_text(&client, "#routes tbody tr td:nth-child(1)", "order-events").await;
    wait_text(&client, "#health", "healthy").await;
    assert!(text_of(&client, "#context").await.contains(&schema));
    assert_eq!(
        eval(
            &client,
            "return document.getElementById('metrics-link').hidden"
        )
        .await,
        Value::Bool(false)
    );
    let first = eval(&client, "return Number(document.body.dataset.loaded)").await;
    wait_for(
        &client,
        &format!("return Number(document.body.dataset.loaded) > {first}"),
    )
    .await;
    wait_text(&client, "#updated", "s ago").await;
    assert_eq!(
        count(&client, "#failed tbody input[type=checkbox]").await,
        0
    );
    screenshot(&client, "console-healthy.png").await;

    for _ in 0..5 {
        stage(&store, 40).await;
        tokio::time::sleep(Duration::from_millis(450)).await;
    }
    let points = "document.querySelector('#chart-backlog polyline')?.dataset.points";
    wait_for(&client, &format!("return Number({points} || 0) >= 6")).await;
    wait_text(&client, "#health", "growing backlog").await;
    wait_text(&client, "#chart-backlog .legend", "order-events").await;
    assert_eq!(count(&client, "#charts svg").await, 4);
    wait_for(
        &client,
        "return document.querySelector('#chart-backlog svg').getAttribute('aria-label').includes('order-events 201 rows')",
    )
    .await;
    screenshot(&client, "console-backlog-chart.png").await;

    client.close().await.unwrap();
    drop_store(&store).await;
}
