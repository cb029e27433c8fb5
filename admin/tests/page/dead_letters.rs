//! Dead letters one by one on RabbitMQ: a misspelt queue shows its error
//! in its own row while everything else renders, a dead letter opens with
//! its reason, headers and payload, and a selected one is replayed after
//! its preview, the other left parked.

use tidings_admin::dead_letters::{DeadLetterQueues, RabbitDeadLetters};
use tidings_admin::tidings_rabbitmq::lapin::options::BasicGetOptions;
use tidings_admin::tidings_rabbitmq::lapin::{Connection, ConnectionProperties};
use tidings_testing::services::amqp_url;

use crate::support::{
    Driver, TOKEN, click, count, delete_queue, drop_store, enter_token, queue_with_dead_letters,
    quick_page, screenshot, seeded_store, serve, text_of, wait_failed_rows, wait_for, wait_text,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_open_one_by_one_and_a_broken_queue_stays_in_its_row() {
    let store = seeded_store(2, 1).await;
    let (queue, ids) = queue_with_dead_letters(2).await;
    let misspelt = format!("{queue}_typo");
    let broker = RabbitDeadLetters::connect(&amqp_url()).await.unwrap();
    let page = quick_page(store.clone())
        .token(TOKEN)
        .dead_letters(broker, vec![misspelt.clone(), queue.clone()]);
    let address = serve(page).await;
    let driver = Driver::start();
    let client = driver.client().await;
    client.goto(&format!("http://{address}/")).await.unwrap();

    let broken = format!("#dead-letter-queues tr[data-queue='{misspelt}']");
    let healthy = format!("#dead-letter-queues tr[data-queue='{queue}']");
    wait_text(&client, &format!("{broken} td.error"), "does not exist").await;
    wait_text(&client, &format!("{healthy} td:nth-child(4)"), "2").await;
    assert_eq!(text_of(&client, &format!("{healthy} td.error")).await, "");
    wait_for(
        &client,
        "return document.querySelectorAll('#dead-letters tbody tr[data-id]').length === 2",
    )
    .await;
    wait_text(&client, "#routes tbody tr td:nth-child(1)", "order-events").await;
    wait_failed_rows(&client, 1).await;
    assert_eq!(
        text_of(&client, "#dead-letters-section .section-error").await,
        ""
    );
    wait_text(&client, "#health", "unreadable").await;
    screenshot(&client, "console-broken-section.png").await;

    let opener = format!("#dead-letters tr[data-id='{}'] button.link", ids[0]);
    click(&client, &opener).await;
    wait_text(
        &client,
        "#dead-letter-detail",
        "total must be positive (order 0)",
    )
    .await;
    wait_text(&client, "#dead-letter-detail pre.payload", "\"total\": -5").await;
    wait_text(
        &client,
        "#dead-letter-detail pre.headers",
        "ce-type: order.placed",
    )
    .await;
    wait_text(&client, "#dead-letter-detail", "order.placed").await;
    screenshot(&client, "console-dead-letter-open.png").await;

    enter_token(&client).await;
    click(
        &client,
        &format!("#dead-letters tr[data-id='{}'] input", ids[0]),
    )
    .await;
    click(&client, "#dead-letters-replay").await;
    wait_for(&client, "return document.getElementById('confirm').open").await;
    wait_text(&client, "#confirm-title", "Replay 1 dead letters?").await;
    assert_eq!(count(&client, "#confirm-list li").await, 1);
    assert!(text_of(&client, "#confirm-list").await.contains(&ids[0]));
    click(&client, "#confirm-ok").await;
    wait_text(&client, "#message", "replayed 1 of 1 dead letters").await;
    wait_text(&client, &format!("{healthy} td:nth-child(4)"), "1").await;
    wait_for(
        &client,
        "return document.querySelectorAll('#dead-letters tbody tr[data-id]').length === 1",
    )
    .await;

    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    let back = channel
        .basic_get(queue.as_str().into(), BasicGetOptions { no_ack: true })
        .await
        .unwrap()
        .expect("the replayed message is back in its queue");
    let id = back.properties.message_id().as_ref().map(|i| i.to_string());
    assert_eq!(id.as_deref(), Some(ids[0].as_str()));
    let broker = RabbitDeadLetters::connect(&amqp_url()).await.unwrap();
    let left = broker.list(&queue, &Default::default()).await.unwrap();
    assert_eq!(
        left.iter().map(|l| l.id.clone()).collect::<Vec<_>>(),
        [ids[1].clone()]
    );
    let _ = connection.close(200, "OK".into()).await;

    client.close().await.unwrap();
    delete_queue(&queue).await;
    drop_store(&store).await;
}
