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

/// PostgreSQL with `wal_level=logical`, for log tailing:
/// `LOGICAL_DATABASE_URL`, default `postgres://postgres@127.0.0.1:5434/test`
/// (a cluster of the tests' own that the setup command starts, the shared
/// server left as it is).
pub fn logical_database_url() -> String {
    env_or(
        "LOGICAL_DATABASE_URL",
        "postgres://postgres@127.0.0.1:5434/test",
    )
}

/// The logical cluster through PgBouncer in transaction mode:
/// `LOGICAL_PGBOUNCER_URL`, default
/// `postgres://postgres@127.0.0.1:6432/test_logical` (a database of the
/// PgBouncer the setup command starts, forwarding to the logical cluster).
pub fn logical_pgbouncer_url() -> String {
    env_or(
        "LOGICAL_PGBOUNCER_URL",
        "postgres://postgres@127.0.0.1:6432/test_logical",
    )
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

/// MongoDB over TLS: `MONGODB_TLS_URL`, default
/// `mongodb://localhost:27018/?directConnection=true&tls=true`, the TLS
/// front the setup command starts for the MongoDB stand-in (a direct
/// connection, since the replica set names its member by its plain
/// address).
pub fn mongodb_tls_url() -> String {
    env_or(
        "MONGODB_TLS_URL",
        "mongodb://localhost:27018/?directConnection=true&tls=true",
    )
}

/// SQS: `SQS_ENDPOINT`, default `http://127.0.0.1:4566`.
pub fn sqs_endpoint() -> String {
    env_or("SQS_ENDPOINT", "http://127.0.0.1:4566")
}

/// RabbitMQ over TLS: `AMQPS_URL`, default
/// `amqps://guest:guest@localhost:5671/%2f`, the TLS front the setup
/// command starts. Its certificate is valid for `localhost` only.
pub fn amqps_url() -> String {
    env_or("AMQPS_URL", "amqps://guest:guest@localhost:5671/%2f")
}

/// RabbitMQ over TLS with a client certificate required:
/// `AMQPS_CLIENT_CERTIFICATE_URL`, default
/// `amqps://guest:guest@localhost:5673/%2f`.
pub fn amqps_client_certificate_url() -> String {
    env_or(
        "AMQPS_CLIENT_CERTIFICATE_URL",
        "amqps://guest:guest@localhost:5673/%2f",
    )
}

/// SQS over HTTPS: `SQS_HTTPS_ENDPOINT`, default `https://localhost:4567`,
/// the TLS front the setup command starts for the SQS stand-in.
pub fn sqs_https_endpoint() -> String {
    env_or("SQS_HTTPS_ENDPOINT", "https://localhost:4567")
}

/// Kafka: `KAFKA_BROKERS`, default `127.0.0.1:9092` (a comma-separated
/// list of `host:port`), the Kafka-protocol broker the setup command
/// starts.
pub fn kafka_brokers() -> String {
    env_or("KAFKA_BROKERS", "127.0.0.1:9092")
}

/// The throwaway certificates the setup command makes: `TIDINGS_TLS_DIR`,
/// default `tls` in `TIDINGS_SERVICES_DIR` (default
/// `~/.cache/tidings-services`). It holds `ca.pem`, `server.pem` and
/// `server.key` (signed by that CA, for `localhost` only), `client.pem`
/// and `client.key` (signed by it too), and `other-ca.pem`, a CA that
/// signed none of them.
pub fn tls_dir() -> std::path::PathBuf {
    if let Ok(dir) = std::env::var("TIDINGS_TLS_DIR") {
        return dir.into();
    }
    let services = std::env::var("TIDINGS_SERVICES_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/tidings-services",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    std::path::Path::new(&services).join("tls")
}

/// The file `name` in [`tls_dir`]; fails the test with the setup command
/// when it is missing.
#[track_caller]
pub fn tls_file(name: &str) -> std::path::PathBuf {
    let path = tls_dir().join(name);
    if let Err(e) = std::fs::metadata(&path) {
        service_missing("Test certificates", &path.display().to_string(), &e);
    }
    path
}

/// Fails the test with the setup command unless something accepts TCP
/// connections at the host and port of `url` (a TLS front, before a test
/// that expects it to refuse a certificate).
#[track_caller]
pub fn expect_listening(service: &str, url: &str) {
    use std::net::{TcpStream, ToSocketAddrs};
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let address = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let addresses: Vec<_> = match address.to_socket_addrs() {
        Ok(addresses) => addresses.collect(),
        Err(e) => service_missing(service, address, &e),
    };
    let mut refused = None;
    for a in &addresses {
        match TcpStream::connect_timeout(a, std::time::Duration::from_secs(2)) {
            Ok(_) => return,
            Err(e) => refused = Some(e),
        }
    }
    match refused {
        Some(e) => service_missing(service, address, &e),
        None => service_missing(service, address, &"no address"),
    }
}

/// A pool of at most `max_connections` on [`database_url`]; fails the
/// test with the setup command when PostgreSQL does not answer.
pub async fn postgres_pool(max_connections: u32) -> sqlx::PgPool {
    let url = database_url();
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .connect(&url)
        .await
        .unwrap_or_else(|e| service_missing("PostgreSQL", &url, &e))
}

/// Drops `schema` on `pool` and everything in it.
///
/// A session of a store the test dropped may still be ending, a claim's
/// transaction begun ahead with it; the server then may pick the drop as a
/// deadlock's victim, and the drop is tried again.
pub async fn drop_schema(pool: &sqlx::PgPool, schema: &str) {
    let sql = format!("drop schema if exists \"{schema}\" cascade");
    for attempt in 1.. {
        match sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
            .execute(pool)
            .await
        {
            Ok(_) => return,
            Err(sqlx::Error::Database(e))
                if e.code().as_deref() == Some("40P01") && attempt < 5 =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("drop schema {schema}: {e}"),
        }
    }
}

/// Drops `schema` on `pool` with the replication slot `<schema>_slot` and
/// the publication `<schema>_pub` a log-tailing test gave it, waiting up
/// to 5 s for a reader that was just stopped to let the slot go.
pub async fn drop_tailed_schema(pool: &sqlx::PgPool, schema: &str) {
    let slot = format!("{schema}_slot");
    let dropped = || async {
        let _ = sqlx::query(
            "select pg_drop_replication_slot(slot_name) from pg_replication_slots \
             where slot_name = $1 and not active",
        )
        .bind(&slot)
        .execute(pool)
        .await;
        sqlx::query_scalar::<_, i64>(
            "select count(*) from pg_replication_slots where slot_name = $1",
        )
        .bind(&slot)
        .fetch_one(pool)
        .await
        .unwrap_or(1)
    };
    crate::eventually::eventually(std::time::Duration::from_secs(5), dropped, |left| {
        *left == 0
    })
    .await;
    let drop = format!("drop publication if exists \"{schema}_pub\"");
    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(pool).await;
    drop_schema(pool, schema).await;
}

/// Drops the replication slots and publications tests left behind on
/// `pool`'s server: a slot `<schema>_slot` or publication `<schema>_pub`
/// of a test schema (`tidings_` and more) that no longer exists, and no
/// longer read. A slot left behind would keep the server's log for good.
pub async fn drop_orphan_slots(pool: &sqlx::PgPool) {
    let orphans = "select pg_drop_replication_slot(slot_name) from pg_replication_slots \
         where slot_name like 'tidings\\_%' and not active \
         and not exists (select 1 from pg_namespace where nspname || '_slot' = slot_name)";
    let _ = sqlx::query(orphans).execute(pool).await;
    let publications: Vec<String> = sqlx::query_scalar(
        "select pubname::text from pg_publication where pubname like 'tidings\\_%' \
         and not exists (select 1 from pg_namespace where nspname || '_pub' = pubname)",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_default();
    for publication in publications {
        let drop = format!("drop publication if exists \"{publication}\"");
        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(pool).await;
    }
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
