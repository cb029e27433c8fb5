//! Dead letters on RabbitMQ through `tidings dead-letters`: a poison
//! message parked by the consumer is listed and shown without being
//! consumed, replayed once its handler is fixed, and handled exactly once;
//! a copy of an event already handled is replayed too and deduped by the
//! inbox. Replaying into a queue that is gone fails and keeps the dead
//! letter; a replay whose connection the broker drops halfway loses
//! nothing and completes when run again. Looking is free: a dead letter
//! in a queue with RabbitMQ 4's default delivery limit survives a hundred
//! looks unchanged, and looks keep the dead letters in their order.

use crate::support;

use std::time::Duration;

use predicates::str::contains;
use support::consumer::{consume, effects, effects_store, envelope, handle_replay_once};
use support::letters::{assert_done, assert_list_refused, assert_reason};
use support::rabbit::{
    declare, declare_with_delivery_limit, delete_only, drain, park, rabbit_source, remove,
};
use support::{json, stdout, tidings};
use tidings_admin::tidings_rabbitmq::{
    ConnectionOptions, PublisherOptions, RabbitPublisher, dead_letter_queue,
};
use tidings_core::{Envelope, PublisherExt};
use tidings_testing::names::unique_name;
use tidings_testing::services::amqp_url;

/// Publishes order `id` to `queue`; returns its envelope.
async fn publish(queue: &str, id: u32) -> Envelope {
    let options = ConnectionOptions::new(amqp_url());
    let publisher = RabbitPublisher::new(options, PublisherOptions::default());
    let envelope = envelope(queue, id);
    publisher.publish(&envelope).await.expect("publish");
    envelope
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_message_is_listed_shown_replayed_and_handled_once() {
    let store = effects_store().await;
    let queue = declare("tidings_cli_orders").await;
    let poison = publish(queue, 7).await;
    let fine = publish(queue, 8).await;

    let seen = consume(&store, queue, rabbit_source(), true, |seen, _| {
        seen.len() >= 2
    })
    .await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(effects(&store).await, (1, 1));

    let list = ["dead-letters", "list", "--queue", queue];
    let listed = json(tidings().args(list));
    assert_eq!(listed["depth"], 1, "{listed}");
    assert_eq!(listed["messages"][0]["id"], poison.event_id.to_string());
    assert_reason(&listed["messages"][0], "negative total");
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
    assert_done(&done, 2, 2);
    assert_eq!(json(tidings().args(list))["depth"], 0);

    handle_replay_once(&store, queue, rabbit_source()).await;
    remove(queue).await;
    store.drop().await;
}

#[tokio::test]
async fn a_replay_into_a_queue_that_is_gone_fails_and_keeps_the_dead_letter() {
    let queue = declare("tidings_cli_gone").await;
    let letter = envelope(queue, 1);
    park(queue, &letter, "poison").await;
    delete_only(queue).await;

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
    let never = "tidings_cli_never_declared";
    assert_list_refused(tidings(), never, "tidings_cli_never_declared.dlq");
    tidings()
        .args(["dead-letters", "purge", "--queue", queue])
        .assert()
        .code(2)
        .stderr(contains("--all"));
    let purge = [
        "dead-letters",
        "purge",
        "--queue",
        queue,
        "--reason",
        "poison",
    ];
    tidings()
        .args(purge)
        .assert()
        .code(1)
        .stderr(contains("pass --yes"));
    let purged = stdout(tidings().args(purge).arg("--yes"));
    assert!(purged.contains("deleted 1 of 1"), "{purged}");
    remove(queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_the_broker_drops_halfway_loses_nothing_and_runs_again() {
    // At 5 a second the replay takes 20 s, long enough to find and close
    // its connection on a busy machine, where each `rabbitmqctl` takes
    // seconds.
    const PARKED: u64 = 100;
    let queue = declare("tidings_cli_dropped").await;
    let mut parked = Vec::new();
    for id in 0..PARKED as u32 {
        let letter = envelope(queue, id);
        park(queue, &letter, "poison").await;
        parked.push(letter.event_id.to_string());
    }
    let name = unique_name("tidings-cli-replay");
    let replay = std::process::Command::new(assert_cmd::cargo::cargo_bin("tidings"))
        .args(["--amqp-url", &amqp_url(), "--amqp-connection-name", &name])
        .args(["dead-letters", "replay", "--queue", queue, "--rate", "5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    tidings_testing::faults::close_rabbitmq_connection(&name).await;
    let output = replay.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("run the command again"), "{stderr}");

    let left = json(tidings().args(["dead-letters", "list", "--queue", queue]))["depth"]
        .as_u64()
        .unwrap();
    assert!((1..PARKED).contains(&left), "{left} dead letters left");
    stdout(tidings().args(["dead-letters", "replay", "--queue", queue]));
    assert_eq!(
        json(tidings().args(["dead-letters", "list", "--queue", queue]))["depth"],
        0
    );
    let mut replayed = drain(queue).await;
    assert!(
        replayed.len() as u64 <= PARKED + 1,
        "more than one copy too many: {}",
        replayed.len()
    );
    replayed.sort();
    replayed.dedup();
    parked.sort();
    assert_eq!(replayed, parked, "a dead letter was lost");
    remove(queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_under_a_delivery_limit_survives_a_hundred_looks() {
    let store = effects_store().await;
    let queue = declare_with_delivery_limit("tidings_cli_limited").await;
    let poison = publish(queue, 7).await;
    let seen = consume(&store, queue, rabbit_source(), true, |seen, _| {
        !seen.is_empty()
    })
    .await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let id = poison.event_id.to_string();
    let list = ["dead-letters", "list", "--queue", queue];
    let parked = json(tidings().args(list))["messages"][0].clone();

    // Ten kinds of look, ten times each: five times the delivery limit.
    support::looks::look(tidings, queue, &id, "negative total", "order.placed", 10);

    let after = json(tidings().args(list));
    assert_eq!(
        after["depth"], 1,
        "a dead letter was dropped or copied: {after}"
    );
    let letter = &after["messages"][0];
    assert_eq!(letter["id"], id);
    assert_eq!(
        letter["deliveries"], 1,
        "not the count at parking: {letter}"
    );
    assert_eq!(letter["reason"], parked["reason"]);
    assert_reason(letter, "negative total");
    for recorded in ["parked_age_secs", "first_failure_age_secs"] {
        assert!(letter[recorded].as_f64().is_some(), "{recorded}: {letter}");
    }
    assert_eq!(
        letter["headers"]["x-tidings-parked-at"], parked["headers"]["x-tidings-parked-at"],
        "the parking time changed"
    );
    let broker_count = letter["headers"]["x-delivery-count"].as_str();
    assert!(
        broker_count.is_none_or(|count| count == "0"),
        "looking counted as deliveries: {broker_count:?}"
    );

    let done = json(tidings().args(["dead-letters", "replay", "--queue", queue]));
    assert_done(&done, 1, 1);
    let seen = consume(&store, queue, rabbit_source(), false, |seen, _| {
        !seen.is_empty()
    })
    .await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(effects(&store).await, (1, 1), "not handled exactly once");
    let reason = seen[0].1.as_deref().unwrap_or_default();
    assert!(reason.contains("negative total"), "{seen:?}");
    assert_eq!(json(tidings().args(list))["depth"], 0);
    remove(queue).await;
    store.drop().await;
}

#[tokio::test]
async fn looking_keeps_the_dead_letters_in_their_order() {
    let queue = declare_with_delivery_limit("tidings_cli_order").await;
    let mut parked = Vec::new();
    for n in 0..5 {
        let letter = envelope(queue, n);
        park(queue, &letter, if n % 2 == 0 { "even" } else { "odd" }).await;
        parked.push(letter.event_id.to_string());
    }
    let ids = |listed: serde_json::Value| -> Vec<String> {
        let messages = listed["messages"].as_array().unwrap().iter();
        messages
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let list = ["dead-letters", "list", "--queue", queue];
    for _ in 0..3 {
        let first_two = ids(json(tidings().args(list).args(["--limit", "2"])));
        assert_eq!(first_two, parked[..2], "--limit 2");
        let odd = ids(json(tidings().args(list).args(["--reason", "odd"])));
        assert_eq!(odd, [parked[1].clone(), parked[3].clone()], "--reason odd");
        let dry = json(
            tidings()
                .args(["dead-letters", "purge", "--all", "--dry-run"])
                .args(["--queue", queue]),
        );
        assert_eq!(dry["ids"], serde_json::json!(parked), "purge --dry-run");
    }
    assert_eq!(ids(json(tidings().args(list))), parked, "full list");
    assert_eq!(drain(&dead_letter_queue(queue)).await, parked);
    remove(queue).await;
}
