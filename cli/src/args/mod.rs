//! The command line, declared with clap: every option documented, the
//! connection settings also read from `TIDINGS_*` environment variables.

mod connection;
mod dead_letters;
mod inbox;
mod outbox;
mod serve;

use clap::{Parser, Subcommand};

use crate::slot_commands::SlotCommand;

pub(crate) use connection::{BrokerArgs, BrokerKind, StoreArgs, StoreKind};
pub(crate) use dead_letters::{DeadLetterAction, DeadLetterArgs};
pub(crate) use inbox::InboxCommand;
pub(crate) use outbox::{FailedArgs, FailedCommand, FinishedStatus, PurgeArgs};
pub(crate) use serve::ServeArgs;

pub(crate) use crate::help::parse;

pub(crate) const AFTER_HELP: &str = "\
Exit codes: 0 done, 1 the operation failed (the message says what to do), 2 bad usage.
Set TIDINGS_LOG=info (a tracing filter) for logs on stderr.";

/// Operate a tidings pipeline: outbox backlog, failed rows, purges, the
/// inbox and dead-letter queues, on PostgreSQL or MongoDB and RabbitMQ or
/// SQS.
#[derive(Debug, Parser)]
#[command(name = "tidings", version, after_help = AFTER_HELP, propagate_version = true)]
pub(crate) struct Cli {
    /// Where the outbox lives.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// Where the dead-letter queues live.
    #[command(flatten)]
    pub(crate) broker: BrokerArgs,
    /// Print JSON for scripts instead of tables.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Create or update the tables (PostgreSQL) or indexes (MongoDB), or
    /// print the SQL for a migration tool of your own.
    Migrate {
        /// Print every migration's SQL for the given schema, tables and
        /// layout, to apply with psql, Flyway, Liquibase or sqlx-migrate,
        /// instead of applying it; `verify` accepts the schema it builds.
        /// Needs no server.
        #[arg(long)]
        print_sql: bool,
    },
    /// Check the tables or indexes without changing them.
    Verify,
    /// Every route's backlog (pending, in flight, failed, retained, oldest
    /// pending age) and every consumer's inbox (marks, oldest mark).
    Status {
        /// Only these routes (repeatable); an unknown route is an error.
        #[arg(long)]
        route: Vec<String>,
    },
    /// Failed outbox rows: list, show, requeue.
    #[command(subcommand)]
    Failed(FailedCommand),
    /// Delete finished rows of a route in batches, with a progress bar.
    Purge(PurgeArgs),
    /// The inbox of handled events.
    #[command(subcommand)]
    Inbox(InboxCommand),
    /// Messages parked in dead-letter queues: list, show, replay, purge.
    #[command(subcommand)]
    DeadLetters(DeadLetterAction),
    /// The replication slot of a PostgreSQL outbox relayed by log tailing:
    /// status, accept.
    #[command(subcommand)]
    Slot(SlotCommand),
    /// Serve the admin page (backlog, failed rows, inbox, dead-letter
    /// depths, requeue and replay buttons) until interrupted.
    Serve(ServeArgs),
    /// Print a shell completion script: `tidings completions bash >
    /// /etc/bash_completion.d/tidings`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}
