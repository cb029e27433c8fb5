//! Headers from staging to the handler, PostgreSQL → RabbitMQ → consumer
//! with the PostgreSQL inbox: what staging refuses is refused with a typed
//! error, and no header can park its event or fail a neighbour.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{BasicProperties, Connection, ConnectionProperties};
use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, World, apply, options, run_until};
use tidings_consumer::{Consumer, TxHandle, handler_fn};
use tidings_core::relay::{PassReport, Relay};
use tidings_core::{Message, OutboxSpec, OutboxStore, RetryPolicy, StageError};
use tidings_postgres::{CommitError, PgContext};
use tidings_rabbitmq::QueueKind;
use tidings_testing::services::amqp_url;

/// The outbox spec feeding the world's queue; rows fail after three
/// attempts, as a cautious user would set them.
fn spec(world: &World) -> &'static OutboxSpec<Order> {
    let spec = OutboxSpec::json("order-events")
        .destination(world.queue.name())
        .retry(RetryPolicy::new().max_attempts(3));
    Box::leak(Box::new(spec))
}

/// Drains the relay until nothing is pending or in flight, for at most
/// 60 s; the passes' reports added up.
async fn relay_all(world: &World, spec: &'static OutboxSpec<Order>) -> PassReport {
    let relay = Relay::new(world.store.clone(), world.publisher.clone(), spec).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut total = PassReport::default();
    loop {
        total.add(relay.drain().await.unwrap());
        let stats = world.store.stats(spec.name()).await.unwrap();
        if stats.pending == 0 && stats.in_flight == 0 {
            return total;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "rows left: {stats:?}, so far {total:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_a_broker_or_the_consumer_interprets_are_refused_at_staging() {
    let world = World::new(QueueKind::Classic).await;
    let spec = spec(&world);
    let refused = [
        ("CC", "RabbitMQ"),
        ("bcc", "RabbitMQ"),
        ("x-delivery-count", "RabbitMQ"),
        ("X-Death", "RabbitMQ"),
        ("x-first-death-queue", "RabbitMQ"),
        ("x-last-death-reason", "RabbitMQ"),
        ("x-tidings-prior-deliveries", "the tidings consumer"),
        ("x-dead-letter-reason", "the tidings consumer"),
        ("ce-id", "the tidings envelope"),
    ];
    for (header, owner) in refused {
        let mut ctx = world.store.begin().await.unwrap();
        ctx.outbox()
            .stage(spec, "order.placed", &Order { id: 1 })
            .unwrap()
            .header(header, "42");
        let err = ctx.commit().await.unwrap_err();
        match err {
            CommitError::Stage(StageError::ReservedHeader {
                name, owner: by, ..
            }) => {
                assert_eq!((name.as_str(), by), (header, owner));
            }
            other => panic!("{header}: {other:?}"),
        }
    }
    let stats = world.store.stats(spec.name()).await.unwrap();
    assert_eq!(stats.pending, 0, "a refused event was written");
    world.drop().await;
}

/// A row carrying `CC` (staged before staging refused it) among 2,000:
/// it fails at once and alone; every other event is published on its
/// first attempt and handled once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_with_a_header_rabbitmq_refuses_fails_alone_among_2000() {
    let world = World::new(QueueKind::Quorum).await;
    let spec = spec(&world);
    let mut bad = None;
    for batch in 0..20 {
        let mut ctx = world.store.begin().await.unwrap();
        for n in 0..100 {
            let id = batch * 100 + n;
            let staged = ctx
                .outbox()
                .stage(spec, "order.placed", &Order { id })
                .unwrap();
            if id == 1_234 {
                bad = Some(staged.envelope().event_id);
            }
        }
        ctx.commit().await.unwrap();
    }
    let schema = world.store.options().get_schema().to_owned();
    let sql = format!(
        "update \"{schema}\".tidings_outbox set headers = headers || '{{\"CC\": \"billing\"}}' \
         where event_id = $1"
    );
    sqlx::query(AssertSqlSafe(sql))
        .bind(bad.unwrap())
        .execute(world.store.pool())
        .await
        .unwrap();

    let report = relay_all(&world, spec).await;

    assert_eq!(
        (report.published, report.failed, report.rescheduled),
        (1_999, 1, 0),
        "{report:?}"
    );
    let consumer = Consumer::new(world.source.clone(), world.queue, counting(&world))
        .unwrap()
        .inbox(world.inbox())
        .options(options().max_deliveries(5));
    let done = run_until(consumer, |_| async { world.effects().await.0 == 1_999 }).await;
    assert_eq!(world.effects().await, (1_999, 1));
    assert_eq!(done.parked, 0);
    world.drop().await;
}

/// A producer outside tidings sends counting headers on a fresh message;
/// the consumer runs the handler instead of parking it unhandled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_count_sent_by_a_producer_does_not_park_the_event() {
    for kind in [QueueKind::Classic, QueueKind::Quorum] {
        let world = World::new(kind).await;
        let envelope = world.envelope(7);
        let mut headers = FieldTable::default();
        for (name, value) in tidings_core::cloudevents::to_attributes(&envelope) {
            headers.insert(name.into(), AMQPValue::LongString(LongString::from(value)));
        }
        headers.insert("x-delivery-count".into(), AMQPValue::LongLongInt(42));
        headers.insert(
            "x-tidings-prior-deliveries".into(),
            AMQPValue::LongString(LongString::from("99")),
        );
        publish_raw(world.queue.name(), &envelope.payload, headers).await;

        let consumer = Consumer::new(world.source.clone(), world.queue, counting(&world))
            .unwrap()
            .inbox(world.inbox())
            .options(options().max_deliveries(5));
        let report = run_until(consumer, |r| async move { r.processed + r.parked > 0 }).await;
        assert_eq!((report.processed, report.parked), (1, 0), "{kind:?}");
        assert_eq!(world.effects().await, (1, 1));
        world.drop().await;
    }
}

/// A handler that applies each order's effect.
fn counting(world: &World) -> impl tidings_consumer::Handler<Order, PgContext<'static>> + use<> {
    let sql = Arc::new(world.effect_sql());
    handler_fn(
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let sql = sql.clone();
            async move { apply(&sql, &msg, &tx).await }
        },
    )
}

/// Publishes with a plain AMQP client, as another producer would.
async fn publish_raw(queue: &str, body: &[u8], headers: FieldTable) {
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .expect("connect");
    let ch = conn.create_channel().await.expect("channel");
    ch.basic_publish(
        queue.into(),
        queue.into(),
        Default::default(),
        body,
        BasicProperties::default().with_headers(headers),
    )
    .await
    .expect("publish")
    .await
    .expect("confirm");
    let _ = conn.close(200, "OK".into()).await;
}
