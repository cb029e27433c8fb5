//! A stored inbox beside the store: its consumer's backlog in a section
//! of its own, its failed messages among the failed rows with their
//! reasons (with no control on a read-only page), one requeued and one
//! deleted after their dry-run previews and a confirmation, and an unknown
//! stored inbox refused.

use tidings_admin::Admin;
use tidings_admin::tidings_postgres::PgOutboxStore;
use tidings_core::{FailedFilter, OutboxAdmin, OutboxSpec, OutboxStore};

use crate::support::{
    Driver, TOKEN, click, count, drop_store, enter_token, http, quick_page, screenshot, seed,
    seeded_store, serve, text_of, wait_failed_rows, wait_for, wait_text,
};

/// What the stored inbox keeps: messages under the consumer's name.
static BILLING: OutboxSpec<u32> = OutboxSpec::json("billing").destination("orders");

/// The stored inbox's table beside `store`'s, in its schema, with one
/// pending message and two failed ones.
async fn stored_table(store: &PgOutboxStore) -> PgOutboxStore {
    let options = store
        .options()
        .clone()
        .table("inbox_messages")
        .inbox_table("inbox_messages_marks");
    let kept = PgOutboxStore::new(store.pool().clone(), options).unwrap();
    kept.migrate().await.unwrap();
    seed(&kept, &BILLING, 1, 2, "handler: total must be positive").await;
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_inboxs_failed_messages_are_requeued_and_deleted_in_the_console() {
    let store = seeded_store(1, 0).await;
    let kept = stored_table(&store).await;
    let failed = kept
        .failed("billing", &FailedFilter::default())
        .await
        .unwrap();
    let (requeued, deleted) = (failed[0].event_id, failed[1].event_id);
    let page = |token: &str| {
        let page = quick_page(store.clone()).token(token);
        page.stored_inbox("billing-inbox", Admin::new(kept.clone()))
    };
    let (address, read_only) = (serve(page(TOKEN)).await, serve(page("")).await);
    let driver = Driver::start();
    let client = driver.client().await;

    client.goto(&format!("http://{read_only}/")).await.unwrap();
    wait_failed_rows(&client, 2).await;
    wait_text(&client, "#failed tbody", "(stored inbox billing-inbox)").await;
    assert_eq!(
        count(&client, "#failed tbody input[type=checkbox]").await,
        0
    );
    client.goto(&format!("http://{address}/")).await.unwrap();

    wait_text(
        &client,
        "#stored-inboxes tbody tr.bad td.health",
        "2 failed",
    )
    .await;
    assert!(
        text_of(&client, "#stored-inboxes tbody")
            .await
            .contains("billing-inbox")
    );
    wait_text(&client, "#health", "2 failed stored messages").await;
    wait_failed_rows(&client, 2).await;
    wait_text(
        &client,
        "#failed tbody",
        "handler: total must be positive (attempt 0)",
    )
    .await;
    wait_text(
        &client,
        "#failed tbody",
        "billing (stored inbox billing-inbox)",
    )
    .await;
    let key = |id| format!("stored-billing-inbox-{id}");
    click(&client, &format!("#open-failed-{}", key(requeued))).await;
    wait_text(&client, "#failed-detail", "stored inbox").await;
    wait_text(&client, "#failed-detail", "billing-inbox").await;
    screenshot(&client, "console-stored-inbox.png").await;

    enter_token(&client).await;
    click(&client, &format!("#sel-failed-{}", key(requeued))).await;
    click(&client, "#failed-requeue").await;
    wait_for(&client, "return document.getElementById('confirm').open").await;
    wait_text(&client, "#confirm-title", "Requeue 1 failed rows?").await;
    let preview = text_of(&client, "#confirm-list").await;
    assert!(
        preview.contains(&format!("billing-inbox: billing {requeued}")),
        "{preview}"
    );
    assert_eq!(count(&client, "#confirm-list li").await, 1);
    assert_eq!(
        kept.stats("billing").await.unwrap().failed,
        2,
        "a preview changes nothing"
    );
    click(&client, "#confirm-ok").await;
    wait_text(&client, "#message", "requeued 1 of 1 failed rows").await;
    wait_failed_rows(&client, 1).await;
    let stats = kept.stats("billing").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (2, 1));

    click(&client, &format!("#sel-failed-{}", key(deleted))).await;
    click(&client, "#failed-delete").await;
    wait_for(&client, "return document.getElementById('confirm').open").await;
    click(&client, "#confirm-ok").await;
    wait_text(&client, "#message", "deleted 1 of 1 failed rows").await;
    wait_failed_rows(&client, 0).await;
    let stats = kept.stats("billing").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (2, 0));
    assert_eq!(
        store.stats("order-events").await.unwrap().pending,
        1,
        "the store's own rows untouched"
    );

    let unknown = "/api/failed?route=billing&stored=no-such-inbox";
    let (status, answer) = http(address, "GET", unknown, None, None).await;
    assert!(status.contains(" 404 "), "{status} {answer}");
    assert!(
        answer.contains("billing-inbox"),
        "names the known ones: {answer}"
    );
    let body = format!(r#"{{"route":"billing","stored":"billing-inbox","ids":["{requeued}"]}}"#);
    let (status, _) = http(address, "POST", "/api/failed/delete", Some(&body), None).await;
    assert!(status.contains(" 401 "), "{status}");

    client.close().await.unwrap();
    drop_store(&store).await;
}
