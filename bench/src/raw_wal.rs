//! The raw limit of a log-tailing drain: a second slot on the same log,
//! read by the replication client the store uses, with the same options
//! (pgoutput protocol 1, binary values, the publication, messages on),
//! counting the store's events and doing nothing else with them: in
//! message mode the logical decoding messages carrying the store's
//! prefix, in table mode the inserts (pgoutput's `I` messages). It
//! decodes no event, keeps no window and confirms nothing: the floor of
//! reading the log, not a relay.

use std::time::{Duration, Instant};

use anyhow::Context;
use pgwire_replication::{ReplicationClient, ReplicationConfig, ReplicationEvent, TlsConfig};
use sqlx::{AssertSqlSafe, PgPool};
use tidings_postgres::{PgOutboxStore, TailMode};
use tidings_testing::services::logical_database_url;

use crate::cpu::CpuTime;
use crate::env::outbox_table;
use crate::tailing::{drop_publication, drop_slot, holder, holder_ended};

/// How long the raw reader may take to reach its count before it is
/// taken for stuck.
const READ_LIMIT: Duration = Duration::from_secs(600);

/// A slot and a publication of the raw reader's own, beside a store's.
#[derive(Debug, Clone)]
pub(crate) struct RawSlot {
    slot: String,
    publication: String,
    /// The prefix of the store's messages.
    prefix: String,
    mode: TailMode,
}

impl RawSlot {
    /// Creates a publication on `store`'s outbox table and a pgoutput slot
    /// starting here: create it before staging, so it reads what the
    /// store's slot reads.
    pub(crate) async fn create(
        pool: &PgPool,
        store: &PgOutboxStore,
        mode: TailMode,
    ) -> anyhow::Result<Self> {
        let options = store.options();
        let schema = options.get_schema();
        let raw = Self {
            slot: format!("{schema}_raw_slot"),
            publication: format!("{schema}_raw_pub"),
            prefix: format!("tidings:{schema}.{}", options.get_table()),
            mode,
        };
        let sql = format!(
            "create publication \"{}\" for table {}",
            raw.publication,
            outbox_table(store)
        );
        sqlx::query(AssertSqlSafe(sql)).execute(pool).await?;
        sqlx::query("select pg_create_logical_replication_slot($1, 'pgoutput')")
            .bind(&raw.slot)
            .execute(pool)
            .await?;
        Ok(raw)
    }

    /// Reads the slot until `count` of the store's events have come;
    /// returns how long it took, the connection included, and the CPU time
    /// spent meanwhile, read before the connection closes, so that the
    /// server's process for it is counted. It reads in a task of the
    /// runtime, as the store's reader does, not on the thread that waits.
    /// Returns once the server's process for the connection has ended.
    pub(crate) async fn read(
        &self,
        pool: &PgPool,
        count: usize,
    ) -> anyhow::Result<(Duration, CpuTime)> {
        let (raw, pool) = (self.clone(), pool.clone());
        let (took, spent, pid) =
            tokio::spawn(async move { raw.read_here(&pool, count).await }).await??;
        holder_ended(pid).await;
        Ok((took, spent))
    }

    /// Reads as [`read`](Self::read) does; returns the time, the CPU time
    /// and the server process that served the connection.
    async fn read_here(
        &self,
        pool: &PgPool,
        count: usize,
    ) -> anyhow::Result<(Duration, CpuTime, Option<u32>)> {
        let before = CpuTime::now();
        let started = Instant::now();
        let mut client = ReplicationClient::connect(self.config()?).await?;
        let mut seen = 0;
        let reading = async {
            while seen < count {
                let event = client
                    .recv()
                    .await?
                    .context("the replication stream ended")?;
                if self.counts(&event) {
                    seen += 1;
                }
            }
            anyhow::Ok(())
        };
        tokio::time::timeout(READ_LIMIT, reading)
            .await
            .with_context(|| format!("read {seen} of {count} events in {READ_LIMIT:?}"))??;
        let took = started.elapsed();
        let spent = CpuTime::now() - before;
        let pid = holder(pool, &self.slot).await?;
        client.stop();
        Ok((took, spent, pid))
    }

    /// Drops the slot and the publication.
    pub(crate) async fn drop(&self, pool: &PgPool) -> anyhow::Result<()> {
        drop_slot(pool, &self.slot).await?;
        drop_publication(pool, &self.publication).await
    }

    /// Whether `event` is one of the store's events.
    fn counts(&self, event: &ReplicationEvent) -> bool {
        match (self.mode, event) {
            (TailMode::Messages, ReplicationEvent::Message { prefix, .. }) => {
                *prefix == self.prefix
            }
            (TailMode::Table, ReplicationEvent::XLogData { data, .. }) => {
                data.first() == Some(&b'I')
            }
            _ => false,
        }
    }

    /// The store's replication settings, on this slot and publication.
    fn config(&self) -> anyhow::Result<ReplicationConfig> {
        let raw = logical_database_url();
        let url = url::Url::parse(&raw).with_context(|| format!("LOGICAL_DATABASE_URL {raw}"))?;
        let host = url
            .host_str()
            .context("LOGICAL_DATABASE_URL names no host")?;
        let user = match url.username() {
            "" => "postgres",
            user => user,
        };
        let database = url.path().trim_start_matches('/');
        Ok(ReplicationConfig::new(
            host,
            user,
            url.password().unwrap_or_default(),
            database,
            self.slot.clone(),
            self.publication.clone(),
        )
        .with_port(url.port().unwrap_or(5432))
        .with_tls(TlsConfig::disabled())
        .with_binary(true)
        .with_application_name("tidings-bench raw reader"))
    }
}
