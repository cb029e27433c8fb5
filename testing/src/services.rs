//! Where the real services are, read from environment variables with local
//! defaults, and the message a test fails with when one does not answer.

/// The command that installs and starts every service the tests need.
pub const SETUP_COMMAND: &str = "bash scripts/setup-services.sh";

/// PostgreSQL: `DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`.
pub fn database_url() -> String {
    env_or("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
}

/// PostgreSQL through a pooler in transaction mode: `PGBOUNCER_URL`,
/// default `postgres://postgres@127.0.0.1:6432/test` (the PgBouncer that
/// the setup command starts in front of the local server).
pub fn pgbouncer_url() -> String {
    env_or("PGBOUNCER_URL", "postgres://postgres@127.0.0.1:6432/test")
}

/// RabbitMQ: `AMQP_URL`, default `amqp://guest:guest@127.0.0.1:5672/%2f`.
pub fn amqp_url() -> String {
    env_or("AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/%2f")
}

/// MongoDB: `MONGODB_URL`, default `mongodb://127.0.0.1:27017/?replicaSet=secantus`.
pub fn mongodb_url() -> String {
    env_or(
        "MONGODB_URL",
        "mongodb://127.0.0.1:27017/?replicaSet=secantus",
    )
}

/// SQS: `SQS_ENDPOINT`, default `http://127.0.0.1:4566`.
pub fn sqs_endpoint() -> String {
    env_or("SQS_ENDPOINT", "http://127.0.0.1:4566")
}

/// Fails the test with the service's name, address, the error, and the
/// command that starts it.
#[track_caller]
pub fn service_missing(service: &str, address: &str, error: &dyn std::fmt::Display) -> ! {
    panic!("{service} at {address} does not answer ({error}); start it with: {SETUP_COMMAND}")
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}
