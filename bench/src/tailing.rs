//! Log-tailing stores on the logical cluster: each with a slot and a
//! publication of its own, a reader of that slot, and their removal, so
//! that no slot outlives the run to retain the log forever.

use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::{AssertSqlSafe, PgPool};
use tidings_core::OutboxSpec;
use tidings_core::relay::{Relay, RelayOptions};
use tidings_postgres::wal::{WalOptions, WalStore};
use tidings_postgres::{LogTailing, PgOutboxOptions, PgOutboxStore, TailMode};
use tidings_testing::names::unique_name;
use tidings_testing::services::logical_database_url;
use tokio_util::sync::CancellationToken;

use crate::cpu::{CpuTime, process_ended};
use crate::env::Env;
use crate::payload::Payload;
use crate::publishers::CountingPublisher;

/// How long the relay may take to publish its events before it counts
/// as stuck.
const RELAY_LIMIT: Duration = Duration::from_secs(600);
/// How long a reader may take to hold its slot.
const READING_LIMIT: Duration = Duration::from_secs(10);
/// How long a slot may stay held by a reader that was stopped before it is
/// left behind with a warning.
const RELEASE_WAIT: Duration = Duration::from_secs(15);

/// The name of a mode in figures.
pub(crate) fn mode_label(mode: TailMode) -> &'static str {
    match mode {
        TailMode::Messages => "message mode",
        TailMode::Table => "table mode",
    }
}

/// A migrated store tailing the log in `mode`, in a fresh schema named
/// after `prefix`, whose slot and publication are named after the schema.
pub(crate) async fn tailing_store(
    env: &Env,
    prefix: &str,
    mode: TailMode,
) -> anyhow::Result<PgOutboxStore> {
    let schema = unique_name(&format!("bench_{prefix}"));
    let tailing = LogTailing::new(mode)
        .slot(format!("{schema}_slot"))
        .publication(format!("{schema}_pub"));
    let options = PgOutboxOptions::new().schema(schema).log_tailing(tailing);
    let store = PgOutboxStore::new(env.pool.clone(), options)?;
    store.migrate().await?;
    Ok(store)
}

/// Starts reading `store`'s slot for `spec`'s route, with the default
/// options.
pub(crate) fn wal_store(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
) -> anyhow::Result<WalStore> {
    Ok(WalStore::start(store.clone(), wal_options(spec)?)?)
}

/// The default options of a reader on the logical cluster for `spec`'s
/// route.
pub(crate) fn wal_options(spec: &'static OutboxSpec<Payload>) -> anyhow::Result<WalOptions> {
    Ok(WalOptions::new(&logical_database_url())?.route(spec))
}

/// Starts a log-tailing relay on `store`, its reader with `options` and
/// itself with `relay_options`, and runs it until it has
/// published `count` events; returns how long that took and the CPU time
/// spent meanwhile, read before the relay stops, so that the server's
/// process for its replication connection is counted; returns once that
/// process has ended.
pub(crate) async fn relay_from_slot(
    store: &PgOutboxStore,
    spec: &'static OutboxSpec<Payload>,
    options: WalOptions,
    relay_options: RelayOptions,
    count: usize,
) -> anyhow::Result<(Duration, CpuTime)> {
    let publisher = CountingPublisher::default();
    let before = CpuTime::now();
    let started = Instant::now();
    let wal = WalStore::start(store.clone(), options)?;
    let relay = Relay::new(wal.clone(), publisher.clone(), spec)?
        .options(relay_options)
        .wakeup(wal.wakeup());
    let cancel = CancellationToken::new();
    let mut running = tokio::spawn({
        let cancel = cancel.clone();
        async move { relay.run(cancel).await }
    });
    tokio::select! {
        () = publisher.reached(count) => {}
        () = tokio::time::sleep(RELAY_LIMIT) => {
            cancel.cancel();
            anyhow::bail!(
                "the relay published {} of {count} events in {RELAY_LIMIT:?}",
                publisher.count()
            );
        }
        stopped = &mut running => {
            stopped.context("the relay panicked")??;
            anyhow::bail!("the relay stopped after {} of {count} events", publisher.count());
        }
    }
    let took = started.elapsed();
    let spent = CpuTime::now() - before;
    let slot = store.options().get_log_tailing().and_then(|t| t.get_slot());
    let pid = match slot {
        Some(slot) => holder(store.pool(), slot).await?,
        None => None,
    };
    cancel.cancel();
    running.await??;
    stop_reading(store, wal).await?;
    holder_ended(pid).await;
    Ok((took, spent))
}

/// Waits until `wal`'s reader holds its slot.
pub(crate) async fn reading(wal: &WalStore) -> anyhow::Result<()> {
    let deadline = Instant::now() + READING_LIMIT;
    while !wal.is_reading() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the reader did not hold the slot within {READING_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Drops `wal`, the last handle on `store`'s reader (its relays gone
/// already), and waits until the slot is released, so that the next
/// reader takes it at once instead of standing by.
pub(crate) async fn stop_reading(store: &PgOutboxStore, wal: WalStore) -> anyhow::Result<()> {
    drop(wal);
    if let Some(slot) = store.options().get_log_tailing().and_then(|t| t.get_slot()) {
        released(store.pool(), slot).await?;
    }
    Ok(())
}

/// Drops a log-tailing store: its slot once no reader holds it, its
/// publication and its schema.
pub(crate) async fn drop_tailing(env: &Env, store: &PgOutboxStore) -> anyhow::Result<()> {
    if let Some(tailing) = store.options().get_log_tailing() {
        if let Some(slot) = tailing.get_slot() {
            drop_slot(&env.pool, slot).await?;
        }
        if let Some(publication) = tailing.get_publication() {
            drop_publication(&env.pool, publication).await?;
        }
    }
    env.drop_store(store).await
}

/// The server process reading the replication slot `slot` to a client,
/// where one does.
pub(crate) async fn holder(pool: &PgPool, slot: &str) -> anyhow::Result<Option<u32>> {
    let pid: Option<i32> =
        sqlx::query_scalar("select active_pid from pg_replication_slots where slot_name = $1")
            .bind(slot)
            .fetch_optional(pool)
            .await?
            .flatten();
    Ok(pid.and_then(|p| u32::try_from(p).ok()))
}

/// Waits until the server process `pid` (from [`holder`]) has ended, so
/// that its run time leaves the server's total before the next side is
/// measured rather than during it.
pub(crate) async fn holder_ended(pid: Option<u32>) {
    if let Some(pid) = pid
        && !process_ended(pid, RELEASE_WAIT).await
    {
        tracing::warn!(
            pid,
            "a replication connection's server process outlived its client"
        );
    }
}

/// Drops the replication slot `slot` once its reader lets go of it.
pub(crate) async fn drop_slot(pool: &PgPool, slot: &str) -> anyhow::Result<()> {
    if released(pool, slot).await? {
        sqlx::query("select pg_drop_replication_slot($1)")
            .bind(slot)
            .execute(pool)
            .await?;
    }
    Ok(())
}

/// Waits until no reader holds the replication slot `slot`: a stopped
/// reader's connection, and the server's process serving it, end a
/// moment later, and a process that ends in the middle of a measurement
/// takes its CPU time out of the server's total. Returns whether the
/// slot exists.
pub(crate) async fn released(pool: &PgPool, slot: &str) -> anyhow::Result<bool> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        let (exists, active): (bool, bool) = sqlx::query_as(
            "select count(*) > 0, coalesce(bool_or(active), false) \
             from pg_replication_slots where slot_name = $1",
        )
        .bind(slot)
        .fetch_one(pool)
        .await?;
        if !active {
            return Ok(exists);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "replication slot {slot} still held after {RELEASE_WAIT:?}; drop it by hand"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Drops the publication `publication` where it exists.
pub(crate) async fn drop_publication(pool: &PgPool, publication: &str) -> anyhow::Result<()> {
    let sql = format!("drop publication if exists \"{publication}\"");
    sqlx::query(AssertSqlSafe(sql)).execute(pool).await?;
    Ok(())
}
