//! Dead letters on RabbitMQ through `tidings dead-letters`: a poison
//! message parked by the consumer is listed and shown without being
//! consumed, replayed once its handler is fixed, and handled exactly once;
//! a copy of an event already handled is replayed too and deduped by the
//! inbox. Replaying into a queue that is gone fails and keeps the dead
//! letter.

mod support;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use predicates::str::contains;
use support::{drop_schema, json, pg_store, stdout, tidings};
use tidings_admin::dead_letters::REPLAYED_REASON_HEADER;
use tidings_admin::tidings_postgres::sqlx::{self, AssertSqlSafe};
use tidings_admin::tidings_postgres::{PgContext, PgOutboxStore};
use tidings_admin::tidings_rabbitmq::lapin::options::QueueDeleteOptions;
use tidings_admin::tidings_rabbitmq::lapin::types::{AMQPValue, FieldTable, LongString};
use tidings_admin::tidings_rabbitmq::lapin::{BasicProperties, Connection, ConnectionProperties};
use tidings_admin::tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, QueueOptions, RabbitPublisher, RabbitSource,
    SourceOptions, Topology, dead_letter_queue,
};
use tidings_consumer::{Consumer, ConsumerOptions, HandlerError, TxHandle, handler_fn};
use tidings_core::{Backoff, Envelope, Message, Publisher, QueueSpec};
use tidings_testing::names::unique_name;
use tidings_testing::services::{amqp_url, service_missing};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Order {
    id: i32,
}

/// What the handler saw of one delivery: order, replay reason, delivery
/// count.
type Seen = (i32, Option<String>, Option<u32>);

const QUICK: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

/// Declares a queue of the test's own with its dead-letter queue.
async fn declare(prefix: &str) -> &'static str {
    let name: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
    let options = QueueOptions::classic().expires(Duration::from_secs(120));
    Topology::new(ConnectionOptions::new(amqp_url()))
        .declare_queue(name, options)
        .await
        .unwrap_or_else(|e| service_missing("RabbitMQ", &amqp_url(), &e));
    name
}

fn envelope(queue: &str, id: i32) -> Envelope {
    let payload = Bytes::from(serde_json::to_vec(&Order { id }).unwrap());
    Envelope::new(
        "order-events",
        queue,
        "order.placed",
        payload,
        "application/json",
    )
}

/// Puts a copy of `envelope` straight into `queue`'s dead-letter queue, as
/// the acker would with `reason`.
async fn park(queue: &str, envelope: &Envelope, reason: &str) {
    let mut headers = FieldTable::default();
    for (name, value) in tidings_core::cloudevents::to_attributes(envelope) {
        headers.insert(name.into(), AMQPValue::LongString(LongString::from(value)));
    }
    headers.insert(
        "x-dead-letter-reason".into(),
        AMQPValue::LongString(LongString::from(reason)),
    );
    let properties = BasicProperties::default()
        .with_message_id(envelope.event_id.to_string().into())
        .with_type(envelope.event_type.as_str().into())
        .with_headers(headers);
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    let dlq = dead_letter_queue(queue);
    channel
        .basic_publish(
            "".into(),
            dlq.as_str().into(),
            Default::default(),
            &envelope.payload,
            properties,
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;
}

/// Runs a consumer of `queue` with the PostgreSQL inbox until `done` holds
/// of what its handler saw, for at most 30 s. The handler counts each
/// order's effect in `effects`, and parks order 7 while `broken`.
async fn consume(
    store: &PgOutboxStore,
    queue: &'static str,
    broken: bool,
    done: impl Fn(&[Seen], u64) -> bool,
) -> Vec<Seen> {
    let spec: &'static QueueSpec<Order> = Box::leak(Box::new(QueueSpec::json(queue)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let broken = Arc::new(AtomicBool::new(broken));
    let sql = Arc::new(format!(
        "insert into \"{}\".effects (order_id, times) values ($1, 1) \
         on conflict (order_id) do update set times = effects.times + 1",
        store.options().get_schema()
    ));
    let handler = handler_fn({
        let seen = seen.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (seen, broken, sql) = (seen.clone(), broken.clone(), sql.clone());
            async move {
                let reason = msg.headers().get(REPLAYED_REASON_HEADER).cloned();
                seen.lock()
                    .unwrap()
                    .push((msg.payload.id, reason, msg.delivery_count));
                if msg.payload.id == 7 && broken.load(SeqCst) {
                    return Err(HandlerError::permanent(
                        "poison: order 7 has a negative total",
                    ));
                }
                let mut ctx = tx.lock().await;
                sqlx::query(AssertSqlSafe(sql.to_string()))
                    .bind(msg.payload.id)
                    .execute(ctx.tx())
                    .await?;
                Ok(())
            }
        }
    });
    let source = RabbitSource::new(
        ConnectionOptions::new(amqp_url()).reconnect(QUICK),
        SourceOptions::default(),
    );
    let inbox = tidings_inbox::Inbox::new(store.inbox(), "billing").unwrap();
    let consumer = Arc::new(
        Consumer::new(source, spec, handler)
            .unwrap()
            .inbox(inbox)
            .options(
                ConsumerOptions::default()
                    .retry_backoff(QUICK)
                    .restart_backoff(QUICK),
            ),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done(&seen.lock().unwrap(), consumer.report().duplicates)
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Time for a stray second delivery to show up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    cancel.cancel();
    task.await.unwrap();
    let seen = seen.lock().unwrap().clone();
    seen
}

/// `(orders with an effect, the most effects one order had)`.
async fn effects(store: &PgOutboxStore) -> (i64, i32) {
    let sql = format!(
        "select count(*), coalesce(max(times), 0) from \"{}\".effects",
        store.options().get_schema()
    );
    sqlx::query_as(AssertSqlSafe(sql))
        .fetch_one(store.pool())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_message_is_listed_shown_replayed_and_handled_once() {
    let store = pg_store().await;
    let create = format!(
        "create table \"{}\".effects (order_id int primary key, times int not null)",
        store.options().get_schema()
    );
    sqlx::query(AssertSqlSafe(create))
        .execute(store.pool())
        .await
        .unwrap();
    let queue = declare("tidings_cli_orders").await;
    let publisher = RabbitPublisher::new(
        ConnectionOptions::new(amqp_url()),
        PublisherOptions::default(),
    );
    let poison = envelope(queue, 7);
    let fine = envelope(queue, 8);
    publisher.publish(&poison).await.unwrap();
    publisher.publish(&fine).await.unwrap();

    let seen = consume(&store, queue, true, |seen, _| seen.len() >= 2).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(effects(&store).await, (1, 1));

    let list = ["dead-letters", "list", "--queue", queue];
    let listed = json(tidings().args(list));
    assert_eq!(listed["depth"], 1, "{listed}");
    assert_eq!(listed["messages"][0]["id"], poison.event_id.to_string());
    assert!(
        listed["messages"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("negative total")
    );
    let id = poison.event_id.to_string();
    let shown = stdout(tidings().args(["dead-letters", "show", "--queue", queue, &id]));
    assert!(
        shown.contains("negative total") && shown.contains("{\"id\":7}"),
        "{shown}"
    );
    let table = stdout(tidings().args(list));
    assert!(
        table.contains("1 of 1 messages") && table.contains(&id),
        "{table}"
    );

    // A copy of an event already handled, as a replay that died between
    // copying and removing would leave behind.
    park(queue, &fine, "a stale copy").await;
    let replay = ["dead-letters", "replay", "--queue", queue, "--rate", "20"];
    let dry = stdout(tidings().args(replay).arg("--dry-run"));
    assert!(dry.contains("would have replayed 2 messages"), "{dry}");
    assert_eq!(json(tidings().args(list))["depth"], 2, "a dry run consumed");
    let done = json(tidings().args(replay));
    assert_eq!(
        (&done["matched"], &done["done"]),
        (&2.into(), &2.into()),
        "{done}"
    );
    assert_eq!(json(tidings().args(list))["depth"], 0);

    let seen = consume(&store, queue, false, |seen, duplicates| {
        seen.iter().any(|s| s.0 == 7) && duplicates >= 1
    })
    .await;
    assert_eq!(
        effects(&store).await,
        (2, 1),
        "order 8 handled twice or 7 not at all"
    );
    let replayed: Vec<_> = seen.iter().filter(|s| s.0 == 7).collect();
    assert_eq!(replayed.len(), 1, "{seen:?}");
    assert!(
        replayed[0]
            .1
            .as_deref()
            .unwrap_or_default()
            .contains("negative total"),
        "{seen:?}"
    );
    assert_eq!(replayed[0].2, Some(1), "the delivery count was not reset");
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_replay_into_a_queue_that_is_gone_fails_and_keeps_the_dead_letter() {
    let queue = declare("tidings_cli_gone").await;
    let letter = envelope(queue, 1);
    park(queue, &letter, "poison").await;
    let connection = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .unwrap();
    let channel = connection.create_channel().await.unwrap();
    channel
        .queue_delete(queue.into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    let _ = connection.close(200, "OK".into()).await;

    tidings()
        .args(["dead-letters", "replay", "--queue", queue])
        .assert()
        .code(1)
        .stderr(contains(format!("queue \"{queue}\" does not exist")));
    assert_eq!(
        json(tidings().args(["dead-letters", "list", "--queue", queue]))["depth"],
        1
    );
    tidings()
        .args(["dead-letters", "show", "--queue", queue, "no-such-id"])
        .assert()
        .code(1)
        .stderr(contains("no dead letter \"no-such-id\""));
    tidings()
        .args([
            "dead-letters",
            "list",
            "--queue",
            "tidings_cli_never_declared",
        ])
        .assert()
        .code(1)
        .stderr(contains(
            "\"tidings_cli_never_declared.dlq\" does not exist",
        ));
    tidings()
        .args(["dead-letters", "purge", "--queue", queue])
        .assert()
        .code(2)
        .stderr(contains("--all"));
    let purged = stdout(tidings().args([
        "dead-letters",
        "purge",
        "--queue",
        queue,
        "--reason",
        "poison",
    ]));
    assert!(purged.contains("deleted 1 of 1"), "{purged}");
    Topology::new(ConnectionOptions::new(amqp_url()))
        .delete_queue(queue)
        .await
        .unwrap();
}
