//! The consumer runner on SQS with the PostgreSQL inbox: the consumer
//! suite of `tidings-testing`, on a standard queue, and on a FIFO queue for
//! order within a key.

use crate::support::{VISIBILITY, client, declare, queue_name, source_options};
use tidings_sqs::{PublisherOptions, QueueOptions, SqsPublisher, SqsSource};
use tidings_testing::consumer::PgWorld;

/// A PostgreSQL schema with the inbox and an effects table, and an SQS
/// queue of the case's own.
type PgSqs = PgWorld<SqsPublisher, SqsSource>;

async fn world(fifo: bool) -> PgSqs {
    let client = client().await;
    let queue = queue_name("orders", fifo);
    let options = QueueOptions::default()
        .max_receive_count(100)
        .visibility_timeout(VISIBILITY);
    declare(&client, &queue, options).await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let source = SqsSource::new(client, source_options());
    PgWorld::new("tidings_sqs_consumer", queue, publisher, source).await
}

mod standard {
    use super::world;
    tidings_testing::consumer_conformance!(world(false); cases:
        a_message_delivered_three_times_has_its_effect_once,
        a_failing_handler_leaves_nothing_and_succeeds_on_redelivery,
        a_permanent_error_parks_at_once_and_leaves_nothing,
        poison_is_parked_and_does_not_block_the_queue,
        shutdown_under_load_then_restart_applies_every_message_once,
    );
}

/// A standard queue does not keep order; a FIFO queue keeps it per
/// message group, the ordering key.
mod fifo {
    use super::world;
    tidings_testing::consumer_conformance!(world(true); cases:
        per_key_messages_run_one_at_a_time_in_order,
    );
}
