//! The consumer runner on a real RabbitMQ queue with the PostgreSQL inbox:
//! the consumer suite of `tidings-testing` on classic and quorum queues,
//! with the broker closing the connection, and what only RabbitMQ shows.

use crate::support;

use std::time::Duration;

use sqlx::AssertSqlSafe;
use support::postgres_rabbitmq::{Order, World, apply, options, run_until};
use tidings_consumer::{Consumer, HandlerError, StoredInbox, TxHandle, handler_fn};
use tidings_core::{Envelope, Message, PublisherExt, QueueSpec};
use tidings_inbox::Inbox;
use tidings_postgres::{PgContext, PgInboxStore, PgOutboxStore};
use tidings_rabbitmq::{QueueKind, RabbitSource};
use tidings_testing::consumer::{self as suite, ConnectionFaults, ConsumerWorld, Effects};
use tidings_testing::faults::close_rabbitmq_connection;

macro_rules! counting_handler {
    ($world:expr) => {{
        let sql = $world.effect_sql();
        handler_fn(
            move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
                let sql = sql.clone();
                async move { apply(&sql, &msg, &tx).await }
            },
        )
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_that_never_reached_a_handler_do_not_count_toward_parking() {
    use futures::StreamExt;
    use tidings_core::Source;

    let world = World::new(QueueKind::Quorum).await;
    world.publish(&world.envelope(1)).await;
    // Seven subscriptions that take the message and go away without
    // settling it, as consumer processes dying with it prefetched would.
    let mut last_count = None;
    for _ in 0..7 {
        let mut stream = world.source.subscribe(world.queue.name()).await.unwrap();
        let delivery = tokio::time::timeout(Duration::from_secs(15), stream.next())
            .await
            .expect("redelivered")
            .unwrap()
            .unwrap();
        last_count = delivery.delivery_count();
        drop((delivery, stream));
    }
    let counted = last_count.unwrap_or(0);
    assert!(counted >= 7, "the broker counted {counted} deliveries");

    let consumer = Consumer::new(world.source.clone(), world.queue, counting_handler!(world))
        .unwrap()
        .inbox(world.inbox())
        .options(options().max_deliveries(3));
    let report = run_until(consumer, |_| async { world.effects().await.0 == 1 }).await;
    assert_eq!((report.processed, report.parked), (1, 0));
    assert_eq!(world.effects().await, (1, 1));
    world.drop().await;
}

impl ConsumerWorld for World {
    type Source = RabbitSource;
    type Inbox = PgInboxStore;
    type Kept = PgOutboxStore;

    fn kept(&self) -> Option<StoredInbox<PgOutboxStore>> {
        self.kept
            .clone()
            .map(tidings_testing::consumer::quick_stored)
    }

    fn source(&self) -> RabbitSource {
        self.source.clone()
    }

    fn queue(&self) -> QueueSpec<suite::Order> {
        QueueSpec::json_named(self.queue.name().to_owned())
    }

    fn inbox(&self) -> Inbox<PgInboxStore> {
        World::inbox(self)
    }

    async fn publish(&self, envelope: &Envelope) {
        self.publisher.publish(envelope).await.expect("publish");
    }

    async fn apply(&self, tx: &TxHandle<PgContext<'static>>, id: u32) -> Result<(), HandlerError> {
        let mut ctx = tx.lock().await;
        sqlx::query(AssertSqlSafe(self.effect_sql()))
            .bind(i32::try_from(id).expect("a small order id"))
            .execute(ctx.tx())
            .await?;
        Ok(())
    }

    async fn effects(&self) -> Effects {
        let (orders, most) = World::effects(self).await;
        Effects {
            orders: orders as u64,
            most: most as u64,
        }
    }

    async fn teardown(&self) {
        self.drop_schema().await;
    }
}

impl ConnectionFaults for World {
    async fn lose_connection(&self) {
        close_rabbitmq_connection(&self.connection_name).await;
    }
}

mod quorum {
    use super::*;
    tidings_testing::consumer_conformance!(
        World::new(QueueKind::Quorum);
        with_connection_faults,
        with_key_order,
        with_give_up,
    );
}

mod classic {
    use super::*;
    tidings_testing::consumer_conformance!(World::new(QueueKind::Classic));
}

mod stored {
    use super::*;
    tidings_testing::consumer_conformance!(
        World::stored(QueueKind::Quorum);
        with_connection_faults,
        with_key_order,
        with_give_up,
    );
}
