//! The `tidings-pg` operator command line against the real server.
#![cfg(feature = "cli")]

mod support;

use std::process::{Command, Output};

use support::{ORDER_EVENTS, drop_schema, store};
use tidings_core::{ClaimRequest, ClaimedBatch, OutboxStore, Outcome, Settlement};
use tidings_postgres::Retention;
use tidings_testing::services::database_url;

fn cli(schema: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidings-pg"))
        .args(["--database-url", &database_url(), "--schema", schema])
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("run tidings-pg")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn operators_see_status_and_requeue_and_purge_failed_rows() {
    let store = store(Retention::Delete).await;
    let schema = store.options().get_schema().to_owned();
    let mut ctx = store.begin().await.unwrap();
    for n in 0..3 {
        ctx.outbox().stage(&ORDER_EVENTS, "t", &n).unwrap();
    }
    ctx.commit().await.unwrap();
    let request = ClaimRequest {
        route: ORDER_EVENTS.route(),
        limit: 2,
        lease: std::time::Duration::from_secs(60),
    };
    let batch = store.claim(request).await.unwrap();
    let failed = batch
        .records()
        .iter()
        .map(|r| Settlement {
            event_id: r.envelope.event_id,
            outcome: Outcome::Failed {
                reason: "poison".into(),
            },
        })
        .collect();
    batch.settle(failed).await.unwrap();

    assert!(stdout(&cli(&schema, &["verify"])).contains("up to date"));
    let status = stdout(&cli(&schema, &["status", "--route", "order-events"]));
    assert!(
        status.contains("pending:             1") && status.contains("failed:              2"),
        "{status}"
    );
    let purged = stdout(&cli(
        &schema,
        &[
            "purge",
            "--route",
            "order-events",
            "--status",
            "failed",
            "--older-than",
            "1h",
        ],
    ));
    assert_eq!(purged.trim(), "deleted 0 rows");
    assert_eq!(
        stdout(&cli(
            &schema,
            &["requeue", "--route", "order-events", "--all"]
        ))
        .trim(),
        "requeued 2 rows"
    );
    assert_eq!(store.stats("order-events").await.unwrap().pending, 3);
    drop_schema(&store).await;
}

#[test]
fn bad_input_fails_with_a_clear_message() {
    for (schema, args, expected) in [
        ("bad\"name", &["status", "--route", "x"][..], "schema name"),
        (
            "tidings_cli",
            &["requeue", "--route", "x"][..],
            "--all or at least one --id",
        ),
        ("tidings_cli", &["frobnicate"][..], "unknown command"),
        (
            "tidings_cli",
            &["purge", "--route", "x", "--status", "gone"][..],
            "--status must be",
        ),
    ] {
        let output = cli(schema, args);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
