//! `tidings` as a Unix tool on the real PostgreSQL server: a reader that
//! closes the pipe early ends it quietly with success, `status` keeps
//! every route once its rows are gone, `migrate --print-sql` applied with
//! psql passes `verify`, errors name the command that fixes them, `inbox
//! show` answers with its exit code, and the help, the environment and
//! the completions behave.

use std::io::{BufRead, BufReader};
use std::process::{Command as Process, Stdio};

use crate::support::{
    ORDERS, drop_schema, json, mark_handled, on_postgres, pg_store, stage, stdout, tidings,
};
use predicates::str::contains;
use tidings_admin::tidings_postgres::PgOutboxStore;
use tidings_admin::tidings_postgres::sqlx::{self, AssertSqlSafe};

use tidings_testing::names::unique_name;
use tidings_testing::services::database_url;

/// Records `count` routes without rows, as stagings long purged leave them.
async fn record_routes(store: &PgOutboxStore, count: u32) {
    let sql = format!(
        "insert into \"{}\".tidings_outbox_routes (route) \
         select 'route-' || lpad(n::text, 5, '0') from generate_series(1, {count}) as n",
        store.options().get_schema()
    );
    sqlx::query(AssertSqlSafe(sql))
        .execute(store.pool())
        .await
        .expect("record routes");
}

/// Runs `tidings` with `args`, reads one line of its output and closes the
/// pipe; returns its exit status and what it wrote on stderr.
fn first_line_then_close(schema: &str, args: &[&str]) -> (std::process::ExitStatus, String) {
    let program = assert_cmd::cargo::cargo_bin("tidings");
    let mut child = Process::new(program)
        .args(["--database-url", &database_url(), "--schema", schema])
        .args(args)
        .env_remove("TIDINGS_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tidings");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("first line");
    assert!(!line.is_empty(), "tidings {args:?} printed nothing");
    drop(reader);
    let output = child.wait_with_output().expect("wait for tidings");
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_reader_closing_the_pipe_ends_listings_quietly() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    record_routes(&store, 3000).await;
    let listed = stdout(on_postgres(&schema).arg("status"));
    assert!(listed.len() > 150_000, "{} bytes", listed.len());

    for args in [&["status"][..], &["status", "--json"]] {
        let (status, stderr) = first_line_then_close(&schema, args);
        assert!(status.success(), "tidings {args:?}: {status}, {stderr}");
        assert_eq!(stderr, "", "tidings {args:?}");
    }
    drop_schema(&store).await;
}

#[tokio::test]
async fn status_lists_every_route_with_zeros_once_its_rows_are_gone() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    stage(&store, &ORDERS, &["order.placed"; 3]).await;
    let delete = format!("delete from \"{schema}\".tidings_outbox");
    sqlx::query(AssertSqlSafe(delete))
        .execute(store.pool())
        .await
        .unwrap();

    let status = json(on_postgres(&schema).arg("status"));
    let routes = status["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 1, "{status}");
    assert_eq!(routes[0]["route"], "order-events");
    for count in ["pending", "in_flight", "failed", "retained"] {
        assert_eq!(routes[0][count], 0, "{count}: {status}");
    }
    let table = stdout(on_postgres(&schema).arg("status"));
    assert!(table.contains("order-events"), "{table}");
    on_postgres(&schema)
        .args(["status", "--route", "order-events"])
        .assert()
        .success();
    drop_schema(&store).await;
}

/// Applies `script` with psql, in one transaction, stopping at an error.
fn psql(script: &str) {
    let mut child = Process::new("psql")
        .args([
            &database_url(),
            "-v",
            "ON_ERROR_STOP=1",
            "--single-transaction",
            "-q",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("psql is needed (apt-get install postgresql-client): {e}"));
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "psql: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn print_sql_applied_with_psql_passes_verify() {
    let store = pg_store().await; // only to check the server answers
    for layout in [&[][..], &["--rotated"]] {
        let schema = unique_name("tidings_cli_sql");
        on_postgres(&schema)
            .args(layout)
            .arg("verify")
            .assert()
            .code(1);
        let script = stdout(on_postgres(&schema).args(layout).args([
            "--table",
            "orders_outbox",
            "migrate",
            "--print-sql",
        ]));
        assert!(
            script.contains(&format!("\"{schema}\".\"orders_outbox\"")),
            "{script}"
        );
        psql(&script);
        on_postgres(&schema)
            .args(layout)
            .args(["--table", "orders_outbox", "verify"])
            .assert()
            .success()
            .stdout(contains("schema is up to date"));
        let migrate =
            json(
                on_postgres(&schema)
                    .args(layout)
                    .args(["--table", "orders_outbox", "migrate"]),
            );
        assert_eq!(migrate["migrate"], "applied 0 migrations", "{migrate}");
        psql(&format!("drop schema \"{schema}\" cascade"));
    }
    drop_schema(&store).await;
}

#[tokio::test]
async fn a_missing_schema_names_the_migrate_command_with_its_options() {
    let schema = unique_name("tidings_cli_missing");
    let output = on_postgres(&schema)
        .args(["--table", "orders_outbox", "status"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let command = format!("tidings migrate --schema {schema} --table orders_outbox");
    assert!(stderr.contains(&format!("`{command}`")), "{stderr}");
    assert!(
        stderr.contains(&format!("`{command} --print-sql`")),
        "{stderr}"
    );
    assert!(!stderr.contains("PgOutboxStore"), "{stderr}");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
}

#[tokio::test]
async fn inbox_show_says_whether_a_consumer_handled_an_event() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    let ids = stage(&store, &ORDERS, &["order.placed"; 2]).await;
    mark_handled(&store.inbox(), "billing", &[ids[0]]).await;

    let show = ["inbox", "show", "--consumer", "billing", "--event-id"];
    let handled = ids[0].to_string();
    let shown = json(on_postgres(&schema).args(show).arg(&handled));
    assert_eq!(shown["handled"], true, "{shown}");
    assert_eq!(shown["consumer"], "billing");
    assert!(shown["handled_secs"].as_f64().is_some(), "{shown}");

    let text = stdout(on_postgres(&schema).args(show).arg(&handled));
    assert!(text.contains("yes"), "{text}");

    on_postgres(&schema)
        .args(["inbox", "show", "--consumer", "billing"])
        .args(["--event-id", &ids[1].to_string()])
        .assert()
        .code(1)
        .stdout(contains("handled         no"))
        .stderr(contains(format!(
            "billing has not handled event {}",
            ids[1]
        )));
    drop_schema(&store).await;
}

#[tokio::test]
async fn connection_options_come_from_tidings_variables() {
    let store = pg_store().await;
    let schema = store.options().get_schema().to_owned();
    stage(&store, &ORDERS, &["order.placed"]).await;
    let mut command = assert_cmd::Command::cargo_bin("tidings").unwrap();
    let status = json(
        command
            .env_remove("DATABASE_URL")
            .env("TIDINGS_DATABASE_URL", database_url())
            .env("TIDINGS_SCHEMA", &schema)
            .arg("status"),
    );
    assert_eq!(status["routes"][0]["route"], "order-events", "{status}");
    drop_schema(&store).await;
}

#[test]
fn a_subcommand_help_shows_its_own_options_and_one_connection_line() {
    let short = stdout(tidings().args(["failed", "list", "-h"]));
    assert!(short.contains("--route"), "{short}");
    assert!(short.contains("--json"), "{short}");
    assert!(!short.contains("--database-url <"), "{short}");
    assert!(!short.contains("Connection:"), "{short}");
    assert_eq!(short.matches("Connection options").count(), 1, "{short}");

    let long = stdout(tidings().args(["failed", "list", "--help"]));
    assert!(long.contains("Connection:"), "{long}");
    for option in [
        "--database-url",
        "--schema",
        "--amqp-url",
        "TIDINGS_DATABASE_URL",
    ] {
        assert!(long.contains(option), "{option} missing from:\n{long}");
    }
}

#[test]
fn completions_are_printed_for_a_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(tidings().args(["completions", shell]));
        assert!(script.contains("dead-letters"), "{shell}: {script}");
    }
    tidings()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(contains("possible values"));
}

#[test]
fn print_sql_needs_no_server() {
    let mut command = assert_cmd::Command::cargo_bin("tidings").unwrap();
    let script = stdout(
        command
            .env_remove("TIDINGS_SCHEMA")
            .args(["--database-url", "postgres://nobody@127.0.0.1:1/none"])
            .args(["--schema", "billing", "migrate", "--print-sql"]),
    );
    assert!(
        script.contains("create schema if not exists \"billing\""),
        "{script}"
    );
    assert!(script.contains("0016_outbox_routes_table"), "{script}");
}
