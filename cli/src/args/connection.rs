//! Where the outbox and the dead-letter queues live: the connection
//! options every command takes, also read from `TIDINGS_*` variables.

use clap::{Args, ValueEnum};

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
