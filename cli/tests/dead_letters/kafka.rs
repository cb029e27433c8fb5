//! Dead letters on the Kafka-protocol broker through `tidings --broker
//! kafka dead-letters`: a poison record parked by the consumer is looked
//! at a hundred times in ten ways without changing, then replayed and
//! handled exactly once with its reason; a deleted dead letter is gone
//! from every later look while its neighbour stays; a missing topic is
//! refused.

use std::time::Duration;

use crate::support::consumer::{POISON, consume, effects, effects_store, envelope, replayed_once};
use crate::support::letters::{assert_done, assert_list_refused, assert_reason};
use crate::support::{json, stdout, tidings};
use predicates::str::contains;
use serde_json::Value;
use tidings_admin::tidings_kafka::{
    ClientOptions, KafkaPublisher, KafkaSource, PublisherOptions, SourceOptions, TopicOptions,
    Topology, dead_letter_topic,
};
use tidings_core::PublisherExt;
use tidings_testing::names::unique_name;
use tidings_testing::services::{expect_listening, kafka_brokers};

/// Client options for the test broker; fails the test with the setup
/// command when nothing listens there.
fn client() -> ClientOptions {
    let brokers = kafka_brokers();
    let first = brokers.split(',').next().unwrap_or_default().to_owned();
    expect_listening("Kafka", &format!("kafka://{first}"));
    ClientOptions::new(brokers).client_id(unique_name("tidings-cli-test"))
}

/// Creates a topic of the test's own, one partition, with its retry and
/// dead-letter topics. Left in place: the test broker keeps topics in
/// memory only.
async fn create_topic(prefix: &str) -> &'static str {
    let topic: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
    Topology::new(&client())
        .expect("admin client")
        .create(topic, &TopicOptions::default().partitions(1))
        .await
        .unwrap_or_else(|e| panic!("create topic {topic}: {e:?}"));
    topic
}

/// `tidings` on the Kafka-protocol broker.
fn on_kafka() -> assert_cmd::Command {
    let mut command = tidings();
    command.args(["--broker", "kafka", "--kafka-brokers", &kafka_brokers()]);
    command
}

/// The ids of the messages a `list --json` printed.
fn ids(listed: &Value) -> Vec<&str> {
    listed["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {listed}"))
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

/// Looks at the dead letter `id` of `queue` in ten ways, each asserting
/// it is there.
fn look_ten_ways(queue: &str, id: &str) {
    let list = ["dead-letters", "list", "--queue", queue];
    let table = stdout(on_kafka().args(list));
    assert!(table.contains(id), "{table}");
    assert_eq!(ids(&json(on_kafka().args(list))), [id]);
    for filter in [
        ["--reason", "negative total"],
        ["--event-type", "order.placed"],
        ["--older-than", "1ms"],
        ["--id", id],
    ] {
        let listed = json(on_kafka().args(list).args(filter));
        assert_eq!(ids(&listed), [id], "{filter:?}");
    }
    let shown = stdout(on_kafka().args(["dead-letters", "show", "--queue", queue, id]));
    assert!(shown.contains("negative total"), "{shown}");
    let dry_runs: [&[&str]; 3] = [
        &["replay", "--dry-run"],
        &["purge", "--all", "--dry-run"],
        &["purge", "--id", id, "--dry-run"],
    ];
    for dry_run in dry_runs {
        let report = json(
            on_kafka()
                .arg("dead-letters")
                .args(dry_run)
                .args(["--queue", queue]),
        );
        assert_done(&report, 1, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_record_survives_a_hundred_looks_and_is_replayed_once() {
    let client = client();
    let store = effects_store().await;
    let queue = create_topic("tidings_cli_orders").await;
    let publisher = KafkaPublisher::new(&client, PublisherOptions::default()).unwrap();
    let poison = envelope(queue, POISON);
    publisher.publish(&poison).await.unwrap();
    publisher.publish(&envelope(queue, 8)).await.unwrap();
    let group = SourceOptions::new(unique_name("billing"))
        .commit_interval(Duration::from_millis(50))
        .session_timeout(Duration::from_secs(6));
    let source = || KafkaSource::new(&client, group.clone()).unwrap();

    let seen = consume(&store, queue, source(), true, |seen, _| seen.len() >= 2).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(effects(&store).await, (1, 1));
    let parked_after = seen.iter().find(|s| s.0 == POISON).unwrap().2;

    let id = poison.event_id.to_string();
    for _ in 0..10 {
        look_ten_ways(queue, &id);
    }
    let list = ["dead-letters", "list", "--queue", queue];
    let listed = json(on_kafka().args(list));
    assert_eq!(listed["depth"], 1, "{listed}");
    let letter = &listed["messages"][0];
    assert_eq!(letter["id"], id.as_str());
    assert_reason(letter, "negative total");
    assert_eq!(
        letter["deliveries"].as_u64().map(|n| n as u32),
        parked_after,
        "the recorded deliveries changed: {letter}"
    );
    assert!(letter["parked_age_secs"].is_number(), "{letter}");

    let done = json(on_kafka().args(["dead-letters", "replay", "--queue", queue]));
    assert_done(&done, 1, 1);
    assert_eq!(ids(&json(on_kafka().args(list))), Vec::<&str>::new());

    let seen = consume(&store, queue, source(), false, |seen, _| {
        seen.iter().any(|s| s.0 == POISON)
    })
    .await;
    assert_eq!(effects(&store).await, (2, 1), "order 8 handled again");
    let replayed = replayed_once(&seen, "negative total");
    // The copy starts from a fresh count, but the group had committed on
    // this partition before, and the source counts the first record it
    // reads from such a partition once more (an earlier member may have
    // died handling it): so 2, where a partition read for the first time
    // would show 1.
    assert_eq!(replayed.2, Some(2), "{seen:?}");
    store.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_dead_letter_is_gone_from_every_later_look() {
    let client = client();
    let queue = create_topic("tidings_cli_gone").await;
    let publisher = KafkaPublisher::new(&client, PublisherOptions::default()).unwrap();
    let mut letters = Vec::new();
    for order in [1, 2] {
        let mut letter = envelope(queue, order);
        letter.destination = dead_letter_topic(queue);
        publisher.publish(&letter).await.unwrap();
        letters.push(letter.event_id.to_string());
    }
    let (gone, kept) = (letters[0].as_str(), letters[1].as_str());
    let purge = ["dead-letters", "purge", "--queue", queue, "--id", gone];

    let dry = json(on_kafka().args(purge).arg("--dry-run"));
    assert_done(&dry, 1, 0);
    on_kafka()
        .args(purge)
        .write_stdin("")
        .assert()
        .code(1)
        .stderr(contains("--yes"));
    let list = ["dead-letters", "list", "--queue", queue];
    assert_eq!(ids(&json(on_kafka().args(list))), [gone, kept]);

    let done = json(on_kafka().args(purge).arg("--yes"));
    assert_done(&done, 1, 1);
    let listed = json(on_kafka().args(list));
    assert_eq!((ids(&listed), &listed["depth"]), (vec![kept], &1.into()));
    on_kafka()
        .args(["dead-letters", "show", "--queue", queue, gone])
        .assert()
        .code(1)
        .stderr(contains("no dead letter"));
    let again = json(on_kafka().args(purge).arg("--dry-run"));
    assert_eq!(again["matched"], 0, "{again}");
    let shown = json(on_kafka().args(["dead-letters", "show", "--queue", queue, kept]));
    assert_eq!(shown["id"], kept);

    let missing = unique_name("tidings_cli_never_created");
    assert_list_refused(on_kafka(), &missing, &format!("{missing}.dlt"));
}
