//! The API over real HTTP: actions that name nothing or something absent
//! change nothing, and the dead-letter gauges reach `/metrics` and the
//! dead-letters JSON.

use std::time::Duration;

use serde_json::Value;
use tidings_admin::Admin;
use tidings_admin::dead_letters::RabbitDeadLetters;
use tidings_admin::page::AdminPage;
use tidings_core::OutboxStore;
use tidings_testing::eventually::eventually;
use tidings_testing::services::amqp_url;
use uuid::Uuid;

use crate::support::{
    TOKEN, delete_queue, drop_store, http, queue_with_dead_letters, quick_page, seeded_store, serve,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn actions_naming_nothing_or_something_absent_change_nothing() {
    let store = seeded_store(1, 1).await;
    let (queue, _) = queue_with_dead_letters(1).await;
    let broker = RabbitDeadLetters::connect(&amqp_url()).await.unwrap();
    let page = quick_page(store.clone())
        .token(TOKEN)
        .dead_letters(broker, vec![queue.clone()]);
    let address = serve(page).await;
    let post = |path: &'static str, body: String| async move {
        http(address, "POST", path, Some(&body), Some(TOKEN)).await
    };

    let none = r#"{"route":"order-events","ids":[]}"#.to_owned();
    let (status, answer) = post("/api/failed/delete", none).await;
    assert!(status.contains(" 400 "), "{status} {answer}");
    let none = format!(r#"{{"queue":"{queue}","ids":[]}}"#);
    let (status, answer) = post("/api/dead-letters/delete", none).await;
    assert!(status.contains(" 400 "), "{status} {answer}");
    let absent = format!(r#"{{"route":"order-events","ids":["{}"]}}"#, Uuid::new_v4());
    let (status, answer) = post("/api/failed/delete", absent).await;
    assert!(status.contains(" 404 "), "{status} {answer}");
    let absent = format!(r#"{{"queue":"{queue}","ids":["no-such-id"]}}"#);
    let (status, answer) = post("/api/dead-letters/replay", absent).await;
    assert!(status.contains(" 404 "), "{status} {answer}");
    let id = Uuid::new_v4();
    let unsigned = format!(r#"{{"route":"order-events","ids":["{id}"]}}"#);
    let (status, _) = http(address, "POST", "/api/failed/delete", Some(&unsigned), None).await;
    assert!(status.contains(" 401 "), "{status}");
    let stats = store.stats("order-events").await.unwrap();
    assert_eq!((stats.pending, stats.failed), (1, 1));

    // The replay read the queue through and copied back what it did not
    // replay; the depth the page reads catches up with the copy a moment
    // later.
    let depths = || async {
        let (_, depths) = http(address, "GET", "/api/dead-letters", None, None).await;
        serde_json::from_str::<Value>(&depths).unwrap()
    };
    let depths = eventually(Duration::from_secs(5), depths, |d| d[0]["messages"] == 1).await;
    assert_eq!(depths[0]["messages"], 1, "{depths}");
    drop_store(&store).await;
    delete_queue(&queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_depth_and_oldest_age_are_on_metrics_and_in_the_json() {
    let store = seeded_store(0, 0).await;
    let (queue, _) = queue_with_dead_letters(2).await;
    let broker = RabbitDeadLetters::connect(&amqp_url()).await.unwrap();
    let page = AdminPage::new(Admin::new(store.clone()))
        .sample_every(Duration::from_millis(200))
        .dead_letters(broker, vec![queue.clone()]);
    let address = serve(page).await;
    tokio::time::sleep(Duration::from_millis(600)).await;

    let (status, text) = http(address, "GET", "/metrics", None, None).await;
    assert!(status.contains(" 200 "), "{status}");
    let labels = format!("{{broker=\"rabbitmq\",queue=\"{queue}\"}}");
    assert!(
        text.contains(&format!("tidings_dead_letter_depth{labels} 2\n")),
        "{text}"
    );
    let age = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("tidings_dead_letter_oldest_age_seconds{labels} ")))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no oldest age in {text}"));
    assert!((89.0..200.0).contains(&age), "{age}");

    let (_, depths) = http(address, "GET", "/api/dead-letters", None, None).await;
    let depths: Value = serde_json::from_str(&depths).unwrap();
    let age = depths[0]["oldest_age_secs"].as_f64().unwrap();
    assert!((89.0..200.0).contains(&age), "{depths}");
    drop_store(&store).await;
    delete_queue(&queue).await;
}
