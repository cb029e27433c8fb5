//! Taking over a killed relay's claims. The survivors are paused
//! (SIGSTOP) before the backlog is staged, so the victim is alone to claim
//! and is sure to be caught holding rows. With locked claims (the
//! default) the rows a relay holds are locked by its open transaction and
//! left untouched, so which rows it held is read from the rows
//! themselves: those whose `xmax` is the transaction id of one of its
//! sessions, found by their application name while the victim too is
//! paused, so it cannot settle them in between. Then the survivors are
//! resumed and the victim killed (SIGKILL), and the time until the
//! survivors have published every one of those rows (deleted them, with
//! retention `Delete`) is the takeover.

use std::time::{Duration, Instant};

use anyhow::bail;
use sqlx::AssertSqlSafe;
use tidings_postgres::PgOutboxStore;
use tidings_testing::faults::ChildProcess;

use crate::env::outbox_table;

/// How long the victim may take to claim its first rows.
const CLAIMED_WITHIN: Duration = Duration::from_secs(30);
/// How often the rows and sessions are looked at after the kill.
const POLL: Duration = Duration::from_millis(5);
/// How long the survivors get to publish the held rows.
const DEADLINE: Duration = Duration::from_secs(120);

/// What the kill of one relay cost.
#[derive(Debug, Clone, Copy)]
pub(super) struct Takeover {
    /// Rows the killed relay held when it was killed.
    pub(super) held: usize,
    /// From the SIGKILL until PostgreSQL had ended the killed relay's
    /// sessions (and with them its claims).
    pub(super) released: Duration,
    /// From the SIGKILL until the survivors had published every held row.
    pub(super) published: Duration,
}

/// Pauses the relays that are to survive, before the backlog is staged.
pub(super) fn pause(survivors: &[ChildProcess]) -> anyhow::Result<()> {
    for survivor in survivors {
        survivor.pause()?;
    }
    Ok(())
}

/// Kills `victim`, whose sessions are named `name`, at a moment it holds
/// claimed rows, resumes the paused `survivors` and times their takeover
/// of those rows.
pub(super) async fn kill_and_time(
    store: &PgOutboxStore,
    victim: &mut ChildProcess,
    name: &str,
    survivors: &[ChildProcess],
) -> anyhow::Result<Takeover> {
    let looking = Instant::now();
    let held = loop {
        victim.pause()?;
        let held = held_rows(store, name).await?;
        if !held.is_empty() {
            break held;
        }
        victim.resume()?;
        if looking.elapsed() > CLAIMED_WITHIN {
            bail!("{name}, alone with the backlog, claimed no row within {CLAIMED_WITHIN:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    for survivor in survivors {
        survivor.resume()?;
    }
    let killed = Instant::now();
    victim.kill().await?;
    let mut released = None;
    loop {
        if released.is_none() && sessions(store, name).await? == 0 {
            released = Some(killed.elapsed());
        }
        if let (Some(released), 0) = (released, remaining(store, &held).await?) {
            return Ok(Takeover {
                held: held.len(),
                released,
                published: killed.elapsed(),
            });
        }
        if killed.elapsed() > DEADLINE {
            bail!("the killed relay's rows were not published within {DEADLINE:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The rows locked by the open transactions of the sessions named `name`.
async fn held_rows(store: &PgOutboxStore, name: &str) -> anyhow::Result<Vec<i64>> {
    let sql = format!(
        "select id from {} where xmax::text in \
         (select backend_xid::text from pg_stat_activity \
          where application_name = $1 and backend_xid is not null)",
        outbox_table(store)
    );
    Ok(sqlx::query_scalar(AssertSqlSafe(sql))
        .bind(name)
        .fetch_all(store.pool())
        .await?)
}

/// Sessions named `name` still open.
async fn sessions(store: &PgOutboxStore, name: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("select count(*) from pg_stat_activity where application_name = $1")
            .bind(name)
            .fetch_one(store.pool())
            .await?,
    )
}

/// Rows of `ids` still in the outbox.
async fn remaining(store: &PgOutboxStore, ids: &[i64]) -> anyhow::Result<i64> {
    let sql = format!(
        "select count(*) from {} where id = any($1)",
        outbox_table(store)
    );
    Ok(sqlx::query_scalar(AssertSqlSafe(sql))
        .bind(ids)
        .fetch_one(store.pool())
        .await?)
}
