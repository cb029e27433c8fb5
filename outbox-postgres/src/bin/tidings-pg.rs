//! Operator tools for a PostgreSQL outbox: the same operations as the API,
//! from a shell.
//!
//! ```sh
//! cargo run -p tidings-postgres --features cli --bin tidings-pg -- --schema shop status --route order-events
//! ```
//!
//! ```text
//! tidings-pg [--database-url URL] [--schema S] [--table T] [--inbox-table T] COMMAND
//!
//!   migrate                                   apply pending migrations
//!   verify                                    check the table, indexes and schema version
//!   status  --route R                         pending, in flight, failed, retained, oldest pending age
//!   requeue --route R (--all | --id UUID ..)  move failed rows back to pending
//!   purge   --route R --status published|failed [--older-than 1h] [--batch 1000]
//! ```
//!
//! The database URL defaults to `DATABASE_URL`, then
//! `postgres://postgres@127.0.0.1:5432/test`.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use anyhow::{Context, bail};
use sqlx::postgres::PgPoolOptions;
use tidings_core::{OutboxStore, PurgeRequest, PurgeStatus, Requeue};
use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tracing_subscriber::EnvFilter;
use uuid::Uuid;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let mut args = Args::parse(std::env::args().skip(1))?;
    let url = args
        .take("--database-url")
        .or_else(|| std::env::var("DATABASE_URL").ok());
    let url = url.unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let mut options = PgOutboxOptions::new();
    if let Some(schema) = args.take("--schema") {
        options = options.schema(schema);
    }
    if let Some(table) = args.take("--table") {
        options = options.table(table);
    }
    if let Some(table) = args.take("--inbox-table") {
        options = options.inbox_table(table);
    }
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&url)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let store = PgOutboxStore::new(pool, options)?;
    let command = args
        .command
        .clone()
        .context("no command given; see the usage in the source's first lines")?;
    match command.as_str() {
        "migrate" => println!("applied {} migrations", store.migrate().await?),
        "verify" => {
            store.verify().await?;
            println!("schema is up to date");
        }
        "status" => status(&store, &args.route()?).await?,
        "requeue" => {
            let which = if args.flag("--all") {
                Requeue::All
            } else {
                Requeue::Ids(args.ids()?)
            };
            println!(
                "requeued {} rows",
                store.requeue_failed(&args.route()?, which).await?
            );
        }
        "purge" => purge(&store, &mut args).await?,
        other => bail!("unknown command {other:?}"),
    }
    args.finish()
}

async fn status(store: &PgOutboxStore, route: &str) -> anyhow::Result<()> {
    let stats = store.stats(route).await?;
    println!("route:               {route}");
    println!("pending:             {}", stats.pending);
    println!("in flight:           {}", stats.in_flight);
    println!("failed:              {}", stats.failed);
    println!("published, retained: {}", stats.published);
    let age = stats.oldest_pending_age.map_or("-".to_owned(), |a| {
        humantime::format_duration(round(a)).to_string()
    });
    println!("oldest pending age:  {age}");
    Ok(())
}

async fn purge(store: &PgOutboxStore, args: &mut Args) -> anyhow::Result<()> {
    let route = args.route()?;
    let status = match args.take("--status").as_deref() {
        Some("published") => PurgeStatus::Published,
        Some("failed") => PurgeStatus::Failed,
        other => bail!("--status must be published or failed, not {other:?}"),
    };
    let older_than = match args.take("--older-than") {
        Some(text) => {
            humantime::parse_duration(&text).with_context(|| format!("--older-than {text:?}"))?
        }
        None => Duration::ZERO,
    };
    let limit = match args.take("--batch") {
        Some(text) => text.parse().with_context(|| format!("--batch {text:?}"))?,
        None => 1000,
    };
    let request = PurgeRequest {
        status,
        older_than,
        limit,
    };
    let mut deleted = 0;
    loop {
        let n = store.purge(&route, request).await?;
        deleted += n;
        if n < limit as u64 {
            break;
        }
    }
    println!("deleted {deleted} rows");
    Ok(())
}

fn round(age: Duration) -> Duration {
    Duration::from_secs(age.as_secs())
}

/// The command line: a command word, `--name value` options, `--flag`s and
/// repeated `--id`s.
struct Args {
    command: Option<String>,
    options: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(raw: impl Iterator<Item = String>) -> anyhow::Result<Self> {
        let mut command = None;
        let mut options = Vec::new();
        let mut raw = raw.peekable();
        while let Some(word) = raw.next() {
            if word.starts_with("--") {
                let value = raw.next_if(|next| !next.starts_with("--"));
                options.push((word, value));
            } else if command.is_none() {
                command = Some(word);
            } else {
                bail!("unexpected argument {word:?}");
            }
        }
        Ok(Self { command, options })
    }

    fn take(&mut self, name: &str) -> Option<String> {
        let at = self.options.iter().position(|(n, _)| n == name)?;
        self.options.remove(at).1
    }

    fn flag(&mut self, name: &str) -> bool {
        let before = self.options.len();
        self.options.retain(|(n, _)| n != name);
        before != self.options.len()
    }

    fn route(&mut self) -> anyhow::Result<String> {
        self.take("--route").context("--route is required")
    }

    fn ids(&mut self) -> anyhow::Result<Vec<Uuid>> {
        let mut ids = Vec::new();
        while let Some(id) = self.take("--id") {
            ids.push(
                id.parse()
                    .with_context(|| format!("--id {id:?} is not a UUID"))?,
            );
        }
        if ids.is_empty() {
            bail!("requeue needs --all or at least one --id");
        }
        Ok(ids)
    }

    fn finish(self) -> anyhow::Result<()> {
        match self.options.first() {
            Some((name, _)) => bail!("unknown or unused option {name}"),
            None => Ok(()),
        }
    }
}
