//! Dead letters on the SQS stand-in through `tidings --broker sqs
//! dead-letters`: a poison message parked by the consumer is listed and
//! shown without being consumed, replayed once its handler is fixed, and
//! handled exactly once; a copy of an event already handled is deduped by
//! the inbox, and looking at it a hundred ways first changes nothing.
//! Replaying into a queue that is gone fails and keeps the dead letter; a
//! dead-letter queue with a redrive policy of its own, which would move
//! its messages on after a few reads, is refused until the policy goes.

use crate::support;

use std::time::Duration;

use predicates::str::contains;
use support::consumer::{consume, effects, effects_store, envelope, handle_replay_once};
use support::letters::{assert_done, assert_list_refused, assert_reason};
use support::{json, stdout, tidings};
use tidings_admin::tidings_sqs::aws_sdk_sqs::Client;
use tidings_admin::tidings_sqs::aws_sdk_sqs::types::{
    MessageSystemAttributeName, QueueAttributeName,
};
use tidings_admin::tidings_sqs::{
    PublisherOptions, QueueOptions, SourceOptions, SqsPublisher, SqsSource, Topology,
    dead_letter_queue, local_client,
};
use tidings_core::{Envelope, PublisherExt};
use tidings_testing::names::unique_name;
use tidings_testing::services::{service_missing, sqs_endpoint};

/// A client on the stand-in; fails the test with the setup command when it
/// does not answer.
async fn client() -> Client {
    let endpoint = sqs_endpoint();
    let client = local_client(&endpoint);
    let probe = client.list_queues().max_results(1).send();
    match tokio::time::timeout(Duration::from_secs(10), probe).await {
        Ok(Ok(_)) => client,
        Ok(Err(e)) => service_missing("SQS", &endpoint, &e),
        Err(e) => service_missing("SQS", &endpoint, &e),
    }
}

/// Declares a queue of the test's own with its dead-letter queue.
async fn declare(client: &Client, prefix: &str) -> &'static str {
    let name: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
    Topology::new(client.clone())
        .declare_queue(
            name,
            QueueOptions::default().retention(Duration::from_secs(600)),
        )
        .await
        .expect("declare");
    name
}

/// Sends order `id` of `queue` straight to its dead-letter queue.
async fn park(client: &Client, queue: &str, id: u32) -> Envelope {
    let mut letter = envelope(queue, id);
    letter.destination = dead_letter_queue(queue);
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    publisher.publish(&letter).await.expect("park");
    letter
}

/// `tidings` on the SQS stand-in.
fn on_sqs() -> assert_cmd::Command {
    let mut command = tidings();
    command.args(["--broker", "sqs", "--sqs-endpoint", &sqs_endpoint()]);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_message_is_listed_shown_replayed_and_handled_once() {
    let client = client().await;
    let store = effects_store().await;
    let queue = declare(&client, "tidings_cli_orders").await;
    let publisher = SqsPublisher::new(client.clone(), PublisherOptions::default());
    let poison = envelope(queue, 7);
    let fine = envelope(queue, 8);
    publisher.publish(&poison).await.unwrap();
    publisher.publish(&fine).await.unwrap();
    let source = || {
        SqsSource::new(
            client.clone(),
            SourceOptions::default().wait_time(Duration::from_secs(1)),
        )
    };

    let seen = consume(&store, queue, source(), true, |seen, _| seen.len() >= 2).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(effects(&store).await, (1, 1));

    let list = ["dead-letters", "list", "--queue", queue];
    let listed = json(on_sqs().args(list));
    assert_eq!(listed["messages"].as_array().unwrap().len(), 1, "{listed}");
    let id = poison.event_id.to_string();
    assert_eq!(listed["messages"][0]["id"], id);
    assert_reason(&listed["messages"][0], "negative total");
    let shown = stdout(on_sqs().args(["dead-letters", "show", "--queue", queue, &id]));
    assert!(
        shown.contains("negative total") && shown.contains("order.placed"),
        "{shown}"
    );
    assert_eq!(json(on_sqs().args(list))["depth"], 1, "listing consumed");
    let parked = listed["messages"][0].clone();
    assert_eq!(parked["deliveries"], 1, "{parked}");

    // Ten kinds of look, ten times each, run here rather than in a test of
    // their own: a second test at once slows the stand-in into
    // redeliveries.
    support::looks::look(on_sqs, queue, &id, "negative total", "order.placed", 10);
    let after = json(on_sqs().args(list));
    assert_eq!(after["depth"], 1, "{after}");
    let letter = &after["messages"][0];
    assert_eq!(
        (&letter["deliveries"], &letter["reason"], &letter["headers"]),
        (&parked["deliveries"], &parked["reason"], &parked["headers"]),
        "looking changed the dead letter"
    );
    for recorded in ["parked_age_secs", "first_failure_age_secs"] {
        assert!(letter[recorded].as_f64().is_some(), "{recorded}: {letter}");
    }

    // A copy of an event already handled, as a replay that died between
    // sending and deleting would leave behind.
    let mut stale = fine.clone();
    stale.destination = dead_letter_queue(queue);
    publisher.publish(&stale).await.unwrap();
    let replay = ["dead-letters", "replay", "--queue", queue, "--rate", "20"];
    let dry = stdout(on_sqs().args(replay).arg("--dry-run"));
    assert!(dry.contains("would have replayed 2 messages"), "{dry}");
    let done = json(on_sqs().args(replay));
    assert_done(&done, 2, 2);
    assert_eq!(json(on_sqs().args(list))["messages"], serde_json::json!([]));

    handle_replay_once(&store, queue, source()).await;
    Topology::new(client).delete_queue(queue).await.unwrap();
    store.drop().await;
}

#[tokio::test]
async fn a_replay_into_a_queue_that_is_gone_fails_and_keeps_the_dead_letter() {
    let client = client().await;
    let queue = declare(&client, "tidings_cli_gone").await;
    park(&client, queue, 1).await;
    let url = client
        .get_queue_url()
        .queue_name(queue)
        .send()
        .await
        .unwrap();
    client
        .delete_queue()
        .queue_url(url.queue_url().unwrap())
        .send()
        .await
        .unwrap();

    on_sqs()
        .args(["dead-letters", "replay", "--queue", queue])
        .assert()
        .code(1)
        .stderr(contains(format!("queue \"{queue}\" does not exist")));
    let listed = json(on_sqs().args(["dead-letters", "list", "--queue", queue]));
    assert_eq!(listed["messages"].as_array().unwrap().len(), 1, "{listed}");
    let never = "tidings_cli_never_declared";
    assert_list_refused(on_sqs(), never, "tidings_cli_never_declared-dlq");
    Topology::new(client).delete_queue(queue).await.unwrap();
}

#[tokio::test]
async fn a_dead_letter_queue_with_its_own_redrive_policy_is_refused_until_it_goes() {
    let client = client().await;
    let queue = declare(&client, "tidings_cli_redriven").await;
    let letter = park(&client, queue, 1).await;
    let url = |name: String| {
        let client = client.clone();
        async move {
            let found = client.get_queue_url().queue_name(name).send().await;
            found.unwrap().queue_url().unwrap().to_owned()
        }
    };
    let (queue_url, dlq_url) = (
        url(queue.to_owned()).await,
        url(dead_letter_queue(queue)).await,
    );
    let arn = client
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    let redrive = |policy: String| {
        client
            .set_queue_attributes()
            .queue_url(&dlq_url)
            .attributes(QueueAttributeName::RedrivePolicy, policy)
            .send()
    };
    let policy = serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": "3" });
    redrive(policy.to_string()).await.unwrap();

    let list = ["dead-letters", "list", "--queue", queue];
    on_sqs()
        .args(list)
        .assert()
        .code(1)
        .stderr(contains("has a redrive policy of its own"))
        .stderr(contains(format!(
            "aws sqs set-queue-attributes --queue-url {dlq_url} --attributes"
        )));

    redrive(String::new()).await.unwrap();
    let received = client
        .receive_message()
        .queue_url(&dlq_url)
        .visibility_timeout(0)
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    let reads =
        &message.attributes().unwrap()[&MessageSystemAttributeName::ApproximateReceiveCount];
    assert_eq!(reads, "1", "the refused command read the dead letter");
    let listed = json(on_sqs().args(list));
    assert_eq!(
        listed["messages"][0]["id"],
        letter.event_id.to_string(),
        "{listed}"
    );
    Topology::new(client).delete_queue(queue).await.unwrap();
}
