//! Every scenario of the bench runs at a tiny size against the real
//! services and prints its figures. Timing is measured by the bench, never
//! asserted here.

use std::process::Command;
use std::sync::Mutex;

/// Held by the scenarios that open many PostgreSQL connections (relay
/// processes, a database per tenant), so that no two of them run at once
/// and together exceed the server's `max_connections`.
static MANY_CONNECTIONS: Mutex<()> = Mutex::new(());

/// Runs `tidings-bench <scenario>` like [`run_with`], alone among the
/// scenarios that open many connections.
fn run_crowded(scenario: &str, extra: &[&str]) -> String {
    let _alone = MANY_CONNECTIONS.lock().unwrap_or_else(|p| p.into_inner());
    run_with(scenario, extra)
}

/// Runs `tidings-bench <scenario>` at a tiny size; returns its stdout.
fn run(scenario: &str) -> String {
    run_with(scenario, &[])
}

/// Runs `tidings-bench <scenario>` at a tiny size with `extra` options
/// after it; returns its stdout.
fn run_with(scenario: &str, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_tidings-bench"))
        .args([scenario, "--scale", "0.002", "--latency-rates", "50,100"])
        .args(["--mongo-rates", "20,50"])
        .args(extra)
        .output()
        .expect("the bench program starts");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "tidings-bench {scenario} failed ({}); if a service is down, run bash scripts/setup-services.sh\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Asserts the output has every measure as a line and a table row.
fn assert_figures(stdout: &str, scenario: &str, measures: &[&str]) {
    for measure in measures {
        let line = format!("{scenario} | {measure}");
        assert!(stdout.contains(&line), "no figure {line:?} in:\n{stdout}");
        let row = format!("| {scenario} | {measure}");
        assert!(stdout.contains(&row), "no table row {row:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("| scenario | measure | value |"),
        "{stdout}"
    );
}

#[test]
fn stage_measures_staging_and_its_raw_limit() {
    let out = run("stage");
    assert_figures(
        &out,
        "stage",
        &["raw two-row transactions", "staged transactions"],
    );
    assert!(out.contains("ratio"), "{out}");
}

#[test]
fn drain_noop_measures_the_relay_and_the_raw_loop() {
    let out = run("drain-noop");
    assert_figures(
        &out,
        "drain-noop",
        &[
            "raw deletes of 500 rows on 2 connections",
            "raw drain, best of the sweep",
            "relayed events, leased claims",
            "relayed events, locked claims",
        ],
    );
}

#[test]
fn drain_rabbitmq_measures_the_relay_and_raw_publishing() {
    let out = run("drain-rabbitmq");
    assert_figures(
        &out,
        "drain-rabbitmq",
        &[
            "raw publishing, window 100 × 1 channel",
            "raw publishing, window 2000 × 4 channels",
            "raw confirmed publishing, best of the sweep",
            "RabbitPublisher alone",
            "relayed events, claims of 1000 in windows of 1000 on 2 confirm channels (default)",
            "relayed events, claims of 500 in windows of 100 on one channel",
        ],
    );
}

#[cfg(feature = "kafka")]
#[test]
fn drain_kafka_measures_the_relay_raw_producing_and_consuming() {
    let out = run("drain-kafka");
    assert_figures(
        &out,
        "drain-kafka",
        &[
            "raw librdkafka producing",
            "KafkaPublisher alone",
            "relayed events (default relay)",
            "raw two-row transactions",
            "consumed messages, one transaction each",
            "consumed messages, batches of up to 16",
        ],
    );
}

#[test]
fn drain_rabbitmq_pooled_measures_the_relay_through_pgbouncer_against_direct() {
    let out = run("drain-rabbitmq-pooled");
    assert_figures(
        &out,
        "drain-rabbitmq-pooled",
        &[
            "relayed events, direct, locked claims of 500 in windows of 100",
            "relayed events through PgBouncer (transaction mode), locked claims",
            "relayed events through PgBouncer (transaction mode), leased claims",
        ],
    );
    assert!(out.contains("ratio ≥ 0.8"), "{out}");
}

#[test]
fn latency_measures_percentiles_and_publishes_every_commit() {
    let out = run("latency");
    for rate in [50, 100] {
        for wake in ["woken in process", "woken by NOTIFY"] {
            assert_figures(
                &out,
                "latency",
                &[
                    &format!("commit-to-publish p50 at {rate}/s, {wake}"),
                    &format!("commit-to-publish p99 at {rate}/s, {wake}"),
                ],
            );
            let unpublished =
                format!("latency | committed but unpublished at {rate}/s, {wake}: 0 ");
            assert!(out.contains(&unpublished), "events went missing:\n{out}");
        }
    }
}

#[test]
fn consume_measures_the_consumer_and_two_row_transactions() {
    let out = run("consume");
    assert_figures(
        &out,
        "consume",
        &[
            "raw two-row transactions",
            "raw receive + ack",
            "consumed messages, one transaction each",
            "consumed messages, batches of up to",
        ],
    );
}

#[test]
fn consume_stored_measures_receiving_and_handling_beside_today() {
    let out = run("consume-stored");
    assert_figures(
        &out,
        "consume-stored",
        &[
            "raw two-row transactions",
            "today's inbox, handled",
            "stored inbox, received (stored + acked)",
            "stored inbox, handled vs today's inbox",
        ],
    );
}

#[test]
fn stored_outage_counts_redeliveries_and_parked_for_both_inboxes() {
    let out = run_with(
        "stored-outage",
        &["--outage-seconds", "1", "--outage-rate", "50"],
    );
    assert_figures(
        &out,
        "stored-outage",
        &[
            "today's inbox, broker redeliveries",
            "stored inbox, broker redeliveries",
            "stored inbox, parked",
            "stored inbox, effects doubled",
        ],
    );
}

#[test]
fn memory_measures_relay_and_consumer_processes() {
    let out = run("memory");
    assert_figures(&out, "memory", &["relay peak RSS", "consumer peak RSS"]);
}

#[test]
fn growth_compares_a_retained_table_with_an_empty_one() {
    let out = run("growth");
    assert_figures(
        &out,
        "growth",
        &[
            "relayed events, empty table",
            "relayed events, 2000 published rows kept",
        ],
    );
}

#[cfg(feature = "otel")]
#[test]
fn otel_overhead_measures_stage_and_drain_with_and_without_spans() {
    let out = run("otel-overhead");
    assert_figures(
        &out,
        "otel-overhead",
        &[
            "stage, without OpenTelemetry",
            "stage, spans to a no-op exporter",
            "drain-rabbitmq, without OpenTelemetry",
            "drain-rabbitmq, spans to a no-op exporter",
        ],
    );
}

#[test]
fn routes_measures_the_shared_relay_against_one_route() {
    let out = run_crowded("routes", &[]);
    assert_figures(
        &out,
        "routes",
        &[
            "one route, one relay",
            "50 routes, one shared relay (4 passes at once)",
            "50 routes, a relay each",
            "50 routes, one shared relay (4 passes at once): PostgreSQL connections opened",
        ],
    );
}

#[test]
fn tenants_measures_the_shared_relay_over_databases_and_its_fairness() {
    let out = run_crowded("tenants", &[]);
    assert_figures(
        &out,
        "tenants",
        &[
            "one database alone, one relay",
            "10 databases, one shared relay (claims of 200), all tenants together",
            "slowest tenant's progress over the fastest's, lowest at any second",
        ],
    );
}

#[test]
fn scale_out_measures_each_count_and_the_takeover_of_a_killed_relay() {
    // Enough events that the killed relay is caught holding some.
    let out = run_crowded("scale-out", &["--scale-events", "3000"]);
    for ordering in ["unordered", "per-key"] {
        assert_figures(
            &out,
            "scale-out",
            &[
                &format!("{ordering}, 1 relay process"),
                &format!("{ordering}, 2 relay processes"),
                &format!("{ordering}, 4 relay processes"),
                &format!(
                    "{ordering}, 2 relays, one killed: its rows published by the survivor after"
                ),
            ],
        );
        for line in [
            format!("scale-out | {ordering}, every count: lost: 0 "),
            format!("scale-out | {ordering}, every count: published twice: 0 "),
            format!("scale-out | {ordering}, 2 relays, one killed: lost: 0 "),
        ] {
            assert!(out.contains(&line), "no `{line}` in:\n{out}");
        }
    }
}

#[test]
fn pinned_compares_runs_under_a_held_snapshot_with_healthy_ones_in_both_layouts() {
    let out = run("pinned");
    let sides = [
        "plain, healthy",
        "plain, snapshot held",
        "rotated, healthy",
        "rotated, snapshot held",
    ];
    let measures: Vec<String> = sides
        .iter()
        .flat_map(|side| {
            [
                "commit-to-publish p99",
                "drain of",
                "dead row versions in the outbox at the end",
            ]
            .map(|what| format!("{side}: {what}"))
        })
        .collect();
    let measures: Vec<&str> = measures.iter().map(String::as_str).collect();
    assert_figures(&out, "pinned", &measures);
    for side in sides {
        let line = format!("pinned | {side}: committed but unpublished: 0 ");
        assert!(out.contains(&line), "events went missing:\n{out}");
    }
}

#[test]
fn stage_wal_measures_both_modes_against_two_row_transactions() {
    let out = run("stage-wal");
    assert_figures(
        &out,
        "stage-wal",
        &[
            "raw two-row transactions",
            "staged transactions, message mode",
            "staged transactions, table mode",
        ],
    );
}

#[test]
fn drain_wal_measures_both_modes_the_raw_slot_reads_and_the_polling_relay() {
    let out = run("drain-wal");
    assert_figures(
        &out,
        "drain-wal",
        &[
            "raw slot read before the relay, message mode",
            "raw slot read after the relay, table mode",
            "relayed events, message mode",
            "relayed events, table mode",
            "relayed events, polling relay",
            "CPU per 1,000 events, log-tailing relay, message mode",
        ],
    );
}

#[test]
fn latency_woken_by_the_slot_publishes_every_commit_beside_notify() {
    let out = run_with("latency", &["--wake", "wal"]);
    for condition in ["woken by NOTIFY", "read from the slot (message mode)"] {
        for rate in [50, 100] {
            let line = format!("committed but unpublished at {rate}/s, {condition}");
            assert!(out.contains(&line), "no figure {line:?} in:\n{out}");
        }
    }
}

#[test]
fn pinned_wal_reports_dead_rows_and_the_drain_under_a_held_snapshot() {
    let out = run("pinned-wal");
    for side in ["healthy", "snapshot held"] {
        let line = format!("pinned-wal | {side}: dead row versions in the outbox at the end: 0 ");
        assert!(out.contains(&line), "no figure {line:?} in:\n{out}");
        let line = format!("pinned-wal | {side}: drain of");
        assert!(out.contains(&line), "no figure {line:?} in:\n{out}");
    }
}

#[cfg(feature = "mongo")]
#[test]
fn mongo_stage_measures_staging_and_raw_driver_transactions() {
    let out = run("mongo-stage");
    assert_figures(
        &out,
        "mongo-stage",
        &["raw two-document transactions", "staged transactions"],
    );
}

#[cfg(feature = "mongo")]
#[test]
fn mongo_drain_noop_measures_the_relay_and_a_raw_driver_loop() {
    let out = run("mongo-drain-noop");
    assert_figures(
        &out,
        "mongo-drain-noop",
        &["raw find + claim + delete loop", "relayed events"],
    );
}

#[cfg(feature = "mongo")]
#[test]
fn mongo_latency_measures_percentiles_and_publishes_every_commit() {
    let out = run("mongo-latency");
    for rate in [20, 50] {
        assert_figures(
            &out,
            "mongo-latency",
            &[
                &format!("commit-to-publish p50 at {rate}/s"),
                &format!("commit-to-publish p99 at {rate}/s"),
            ],
        );
        let unpublished = format!("mongo-latency | committed but unpublished at {rate}/s: 0 ");
        assert!(out.contains(&unpublished), "events went missing:\n{out}");
    }
}
