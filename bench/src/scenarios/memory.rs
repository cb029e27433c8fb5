//! memory: the peak RSS of a relay process draining a backlog to RabbitMQ
//! and of a consumer process handling it with the PostgreSQL inbox.
//!
//! Each runs as a child process of this program (`tidings-bench child
//! relay|consumer ..`), so its peak resident set (`VmHWM` in
//! `/proc/self/status`) is its own, not the bench's.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::postgres::PgPoolOptions;
use tidings_core::OutboxSpec;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore, Retention};
use tidings_rabbitmq::{ConnectionOptions, PublisherOptions, RabbitPublisher};
use tidings_testing::services::{amqp_url, database_url};
use tokio::process::Command;

use crate::consuming::{consume, create_invoices};
use crate::env::{Env, connect_options, spec};
use crate::load::stage_pending;
use crate::payload::Payload;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;

const NAME: &str = "memory";
/// What a child prints last: its peak RSS in kB.
const PEAK_PREFIX: &str = "vmhwm_kb=";
/// Connections of a child's pool.
const CHILD_CONNECTIONS: u32 = 10;

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let store = env.store("memory", Retention::Delete).await?;
    let queue = env.queue("bench-memory").await?;
    let result = async {
        let spec = spec(queue);
        create_invoices(&store).await?;
        stage_pending(&store, spec, sizes.memory_events).await?;
        env.vacuum(&store).await?;
        let schema = store.options().get_schema();
        let count = sizes.memory_events.to_string();
        let batch = sizes.wide_claim.to_string();
        let relay_kb = child(&["relay", schema, spec.name(), queue, &count, &batch]).await?;
        report(
            Figure::new(NAME, "relay peak RSS", relay_kb as f64 / 1024.0, "MB")
                .goal(Goal::AtMost(30.0)),
        );
        let clients = sizes.clients.to_string();
        let consumer_kb = child(&["consumer", schema, queue, &count, &clients]).await?;
        report(Figure::new(
            NAME,
            "consumer peak RSS",
            consumer_kb as f64 / 1024.0,
            "MB",
        ));
        Ok(())
    }
    .await;
    env.remove([&store], [queue]).await?;
    result
}

/// Runs this program as `child <args>`; returns the peak RSS it printed.
async fn child(args: &[&str]) -> anyhow::Result<u64> {
    let exe = std::env::current_exe().context("locating the bench program")?;
    let output = Command::new(exe)
        .arg("child")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "child {} failed ({}): {}",
            args[0],
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(PEAK_PREFIX))
        .context("the child printed no peak RSS")?
        .trim()
        .parse()
        .context("the child's peak RSS")
}

/// The child side: `relay <schema> <route> <queue> <count> <batch>` drains
/// the backlog to RabbitMQ; `consumer <schema> <queue> <count>
/// <concurrency>` handles it. Either prints its peak RSS at the end.
pub(crate) async fn run_child(args: Vec<String>) -> anyhow::Result<String> {
    let pool = PgPoolOptions::new()
        .max_connections(CHILD_CONNECTIONS)
        .connect_with(connect_options(&database_url())?)
        .await?;
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i).map(String::as_str).context("missing argument")
    };
    let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema(arg(1)?))?;
    let connection = ConnectionOptions::new(amqp_url()).connection_name("tidings-bench-child");
    match arg(0)? {
        "relay" => {
            let spec: &'static OutboxSpec<Payload> = Box::leak(Box::new(
                OutboxSpec::json(leak(arg(2)?)).destination(leak(arg(3)?)),
            ));
            let count: usize = arg(4)?.parse()?;
            let publisher = RabbitPublisher::new(connection, PublisherOptions::default());
            let relay = Relay::new(store, publisher, spec)?
                .options(RelayOptions::default().batch_size(arg(5)?.parse()?));
            let drained = relay.drain().await?;
            if drained.published != count {
                bail!("relayed {} of {count}", drained.published);
            }
        }
        "consumer" => {
            let count: usize = arg(3)?.parse()?;
            let concurrency: usize = arg(4)?.parse()?;
            consume(&store, connection, leak(arg(2)?), count, concurrency, 1).await?;
        }
        other => bail!("unknown child {other}"),
    }
    // Give the runtime's background tasks a moment, so the peak is final.
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(format!("{PEAK_PREFIX}{}", peak_rss_kb()?))
}

/// This process's peak resident set size, in kB.
fn peak_rss_kb() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/self/status")
}
