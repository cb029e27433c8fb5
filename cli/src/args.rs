//! The command line, declared with clap: every option documented, the
//! connection settings also read from `TIDINGS_*` environment variables.

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use uuid::Uuid;

use crate::slot_commands::SlotCommand;

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

/// The outbox store to connect to.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Connection")]
pub(crate) struct StoreArgs {
    /// The store kind.
    #[arg(long, global = true, env = "TIDINGS_STORE", value_enum, default_value_t = StoreKind::Postgres)]
    pub(crate) store: StoreKind,
    /// PostgreSQL server.
    #[arg(
        long,
        global = true,
        env = "TIDINGS_DATABASE_URL",
        hide_env_values = true,
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub(crate) database_url: String,
    /// PostgreSQL schema of the outbox tables [default: public].
    #[arg(long, global = true, env = "TIDINGS_SCHEMA")]
    pub(crate) schema: Option<String>,
    /// PostgreSQL outbox table [default: tidings_outbox].
    #[arg(long, global = true, env = "TIDINGS_TABLE")]
    pub(crate) table: Option<String>,
    /// PostgreSQL inbox table [default: tidings_inbox].
    #[arg(long, global = true, env = "TIDINGS_INBOX_TABLE")]
    pub(crate) inbox_table: Option<String>,
    /// The PostgreSQL outbox is rotated (Layout::Rotated): `migrate`
    /// converts a plain one, `verify` expects it.
    #[arg(long, global = true, env = "TIDINGS_ROTATED")]
    pub(crate) rotated: bool,
    /// MongoDB server.
    #[arg(
        long,
        global = true,
        env = "TIDINGS_MONGODB_URL",
        hide_env_values = true,
        default_value = "mongodb://127.0.0.1:27017/?replicaSet=secantus"
    )]
    pub(crate) mongodb_url: String,
    /// MongoDB database.
    #[arg(
        long,
        global = true,
        env = "TIDINGS_MONGODB_DATABASE",
        default_value = "tidings"
    )]
    pub(crate) mongodb_database: String,
    /// MongoDB outbox collection [default: tidings_outbox].
    #[arg(long, global = true, env = "TIDINGS_COLLECTION")]
    pub(crate) collection: Option<String>,
    /// MongoDB inbox collection [default: tidings_inbox].
    #[arg(long, global = true, env = "TIDINGS_INBOX_COLLECTION")]
    pub(crate) inbox_collection: Option<String>,
}

/// An outbox store kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StoreKind {
    /// PostgreSQL (`--database-url`).
    Postgres,
    /// MongoDB (`--mongodb-url`, `--mongodb-database`).
    Mongo,
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

/// The admin page.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on; anything but loopback needs a token.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) bind: std::net::SocketAddr,
    /// The bearer token writes need; without one the page is read-only.
    #[arg(long, env = "TIDINGS_ADMIN_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A queue of the --broker whose dead letters the console shows,
    /// replays and deletes (repeatable).
    #[arg(long)]
    pub(crate) dead_letter_queue: Vec<String>,
    /// How often the console refreshes itself (e.g. 5s, 1m).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub(crate) refresh: Duration,
    /// The tenant this store belongs to, shown at the top of the console.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// A stored inbox the console shows beside the store, as NAME=TABLE:
    /// the table (MongoDB: collection) beside the outbox where consumers
    /// with a stored inbox keep what they receive (repeatable).
    #[arg(long, value_name = "NAME=TABLE", value_parser = stored_inbox)]
    pub(crate) stored_inbox: Vec<(String, String)>,
}

/// A `--stored-inbox` value: its name and its table.
fn stored_inbox(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((name, table)) if !name.is_empty() && !table.is_empty() => {
            Ok((name.to_owned(), table.to_owned()))
        }
        _ => Err(format!(
            "{value:?} is not NAME=TABLE, such as billing=inbox_messages"
        )),
    }
}

/// Failed rows.
#[derive(Debug, Subcommand)]
pub(crate) enum FailedCommand {
    /// List the failed rows of a route, oldest failure first.
    List(FailedArgs),
    /// Show one failed row with its payload and reason.
    Show {
        /// The route.
        #[arg(long)]
        route: String,
        /// The event id.
        id: Uuid,
    },
    /// Move failed rows back to pending with fresh attempt counts. Needs a
    /// filter or --all.
    Requeue {
        #[command(flatten)]
        filter: FailedArgs,
        /// Requeue every failed row of the route (up to --limit).
        #[arg(long, required_unless_present_any = ["event_type", "older_than", "id"])]
        all: bool,
        /// Only say how many rows would move.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete failed rows by event id, for good: their events are never
    /// published. Shows them and asks first (--yes without a terminal).
    Delete(crate::failed_commands::DeleteArgs),
}

/// Which failed rows.
#[derive(Debug, Args)]
pub(crate) struct FailedArgs {
    /// The route.
    #[arg(long)]
    pub(crate) route: String,
    /// Only rows of this event type.
    #[arg(long)]
    pub(crate) event_type: Option<String>,
    /// Only rows that failed at least this long ago (e.g. 30m, 2h, 7d).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) older_than: Option<Duration>,
    /// Only these event ids (repeatable).
    #[arg(long)]
    pub(crate) id: Vec<Uuid>,
    /// At most this many rows.
    #[arg(long, default_value_t = 1000)]
    pub(crate) limit: usize,
}

/// A purge of finished rows.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// The route.
    #[arg(long)]
    pub(crate) route: String,
    /// Which finished rows.
    #[arg(long, value_enum)]
    pub(crate) status: FinishedStatus,
    /// Only rows finished at least this long ago (e.g. 7d).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    pub(crate) older_than: Duration,
    /// Rows deleted per statement.
    #[arg(long, default_value_t = 1000)]
    pub(crate) batch: usize,
    /// Only count the rows that would go.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// A finished status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FinishedStatus {
    /// Published rows kept for retention.
    Published,
    /// Failed rows.
    Failed,
}

/// The inbox.
#[derive(Debug, Subcommand)]
pub(crate) enum InboxCommand {
    /// Whether a consumer handled an event: when, or the attempts on it
    /// so far. Exits 0 when handled, 1 when not.
    Show {
        /// The consumer.
        #[arg(long)]
        consumer: String,
        /// The event id.
        #[arg(long)]
        event_id: Uuid,
    },
    /// Delete one consumer's marks (and attempt counts) older than an age.
    /// A redelivery of an event whose mark is gone is handled again.
    Purge {
        /// The consumer.
        #[arg(long)]
        consumer: String,
        /// Only marks at least this old (e.g. 30d).
        #[arg(long, value_parser = humantime::parse_duration)]
        older_than: Duration,
        /// Marks deleted per statement.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
    },
}

/// The broker to connect to.
#[derive(Debug, Args)]
#[command(next_help_heading = "Connection")]
pub(crate) struct BrokerArgs {
    /// The broker kind.
    #[arg(long, global = true, env = "TIDINGS_BROKER", value_enum, default_value_t = BrokerKind::Rabbitmq)]
    pub(crate) broker: BrokerKind,
    /// RabbitMQ server.
    #[arg(
        long,
        global = true,
        env = "TIDINGS_AMQP_URL",
        hide_env_values = true,
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
    )]
    pub(crate) amqp_url: String,
    /// The name RabbitMQ's management tools list this tool's connection by.
    #[arg(
        long,
        global = true,
        env = "TIDINGS_AMQP_CONNECTION_NAME",
        default_value = "tidings-cli"
    )]
    pub(crate) amqp_connection_name: String,
    /// SQS endpoint; AWS's own when not given (credentials and region from
    /// the usual AWS settings).
    #[arg(long, global = true, env = "TIDINGS_SQS_ENDPOINT")]
    pub(crate) sqs_endpoint: Option<String>,
    /// Kafka brokers, a comma-separated list of host:port.
    #[arg(
        long,
        global = true,
        env = "TIDINGS_KAFKA_BROKERS",
        default_value = "127.0.0.1:9092"
    )]
    pub(crate) kafka_brokers: String,
}

/// A broker kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BrokerKind {
    /// RabbitMQ: the dead-letter queue of `q` is `q.dlq`.
    Rabbitmq,
    /// SQS: the dead-letter queue of `q` is `q-dlq` (needs the `sqs` feature).
    Sqs,
    /// Kafka: the dead-letter topic of `t` is `t.dlt` (needs the `kafka`
    /// feature).
    Kafka,
}

/// What to do with dead letters.
#[derive(Debug, Subcommand)]
pub(crate) enum DeadLetterAction {
    /// Dead-letter queue depths, or with a filter the messages, left in place.
    List(DeadLetterArgs),
    /// One dead letter with its headers, reason and body, left in place.
    Show {
        /// The queue the message was parked from (not its dead-letter queue).
        #[arg(long)]
        queue: String,
        /// The message id (the event id for tidings' messages).
        id: String,
    },
    /// Send dead letters back to the queue they were parked from, with a
    /// fresh delivery count and the reason in x-tidings-replayed-reason.
    /// Safe to run again after a failure.
    Replay {
        #[command(flatten)]
        filter: DeadLetterArgs,
        /// At most this many messages a second.
        #[arg(long)]
        rate: Option<f64>,
        /// Only say which messages would go.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete dead letters. Needs a filter or --all; lists what would go and
    /// asks first (--yes to skip).
    Purge {
        #[command(flatten)]
        filter: DeadLetterArgs,
        /// Delete every dead letter of the queue (up to --limit).
        #[arg(long, required_unless_present_any = ["event_type", "older_than", "reason", "id"])]
        all: bool,
        /// Only say which messages would go.
        #[arg(long)]
        dry_run: bool,
        /// Delete without asking; needed where there is no terminal to ask on.
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// Which dead letters.
#[derive(Debug, Args)]
pub(crate) struct DeadLetterArgs {
    /// The queue the messages were parked from (not its dead-letter queue).
    #[arg(long)]
    pub(crate) queue: String,
    /// Only messages of this event type.
    #[arg(long)]
    pub(crate) event_type: Option<String>,
    /// Only messages sent at least this long ago (e.g. 1h).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) older_than: Option<Duration>,
    /// Only messages whose parking reason contains this text.
    #[arg(long)]
    pub(crate) reason: Option<String>,
    /// Only these message ids (repeatable).
    #[arg(long)]
    pub(crate) id: Vec<String>,
    /// At most this many messages.
    #[arg(long, default_value_t = 1000)]
    pub(crate) limit: usize,
}
