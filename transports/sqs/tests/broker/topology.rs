//! Creating and deleting queues from specs.

use std::collections::HashMap;
use std::time::Duration;

use crate::support::{client, queue_name};
use tidings_core::{OutboxSpec, QueueSpec};
use tidings_sqs::aws_sdk_sqs::Client;
use tidings_sqs::aws_sdk_sqs::types::QueueAttributeName;
use tidings_sqs::{QueueOptions, Topology, TopologyError, dead_letter_queue};

async fn attributes(client: &Client, queue: &str) -> Option<HashMap<QueueAttributeName, String>> {
    let url = client.get_queue_url().queue_name(queue).send().await.ok()?;
    let output = client
        .get_queue_attributes()
        .queue_url(url.queue_url()?)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .expect("queue attributes");
    output.attributes().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_queue_gets_a_fifo_dead_letter_queue_and_redrive_policy() {
    let client = client().await;
    let queue = queue_name("topology", true);
    let topology = Topology::new(client.clone());
    let options = QueueOptions::default()
        .max_receive_count(4)
        .visibility_timeout(Duration::from_secs(7))
        .retention(Duration::from_secs(600));
    let url = topology
        .declare_queue(&queue, options)
        .await
        .expect("declare");
    assert!(url.ends_with(&queue), "{url}");
    topology
        .declare_queue(&queue, options)
        .await
        .expect("declaring again changes nothing");

    let main = attributes(&client, &queue).await.expect("queue exists");
    assert_eq!(main[&QueueAttributeName::FifoQueue], "true");
    assert_eq!(
        main[&QueueAttributeName::ContentBasedDeduplication],
        "false"
    );
    assert_eq!(main[&QueueAttributeName::VisibilityTimeout], "7");
    let policy: serde_json::Value =
        serde_json::from_str(&main[&QueueAttributeName::RedrivePolicy]).unwrap();
    let dlq = dead_letter_queue(&queue);
    assert!(
        policy["deadLetterTargetArn"]
            .as_str()
            .unwrap()
            .ends_with(&dlq)
    );
    assert_eq!(policy["maxReceiveCount"].to_string().trim_matches('"'), "4");
    let dead = attributes(&client, &dlq)
        .await
        .expect("dead-letter queue exists");
    assert_eq!(dead[&QueueAttributeName::FifoQueue], "true");

    topology.delete_queue(&queue).await.expect("delete");
    assert!(attributes(&client, &queue).await.is_none());
    assert!(attributes(&client, &dlq).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specs_name_their_queues_and_bad_names_are_refused() {
    let client = client().await;
    let topology = Topology::new(client.clone());
    let name: &'static str = Box::leak(queue_name("spec", false).into_boxed_str());
    let spec: QueueSpec<u32> = QueueSpec::json(name);
    topology
        .declare_queue_spec(&spec, QueueOptions::default().without_dead_letter_queue())
        .await
        .expect("declare");
    let main = attributes(&client, name).await.expect("queue exists");
    assert!(!main.contains_key(&QueueAttributeName::RedrivePolicy));
    assert!(
        attributes(&client, &dead_letter_queue(name))
            .await
            .is_none()
    );

    let nowhere: OutboxSpec<u32> = OutboxSpec::json("events");
    let error = topology
        .declare_outbox_spec(&nowhere, QueueOptions::default())
        .await
        .expect_err("a spec without destination");
    assert!(matches!(error, TopologyError::Name(_)), "{error:?}");
    let error = topology
        .declare_queue("has.dot", QueueOptions::default())
        .await
        .expect_err("an illegal name");
    assert!(matches!(error, TopologyError::Name(_)), "{error:?}");
    topology.delete_queue(name).await.expect("delete");
}
