//! The fault kit on real processes and a real PostgreSQL server.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tidings_testing::faults::{ChildProcess, KillSchedule, Killer, terminate_postgres_sessions};
use tidings_testing::names::unique_name;
use tidings_testing::services::{database_url, service_missing};
use tokio::process::Command;

fn sleeper() -> Command {
    let mut command = Command::new("sleep");
    command.arg("30");
    command
}

/// The scheduler state of a process, from `/proc/<pid>/stat`.
fn state(child: &ChildProcess) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).expect("stat");
    let after_name = stat.rsplit_once(')').expect("a process name").1;
    after_name.trim_start().chars().next().expect("a state")
}

#[tokio::test]
async fn a_killer_kills_and_restarts_on_its_schedule() {
    let schedule =
        KillSchedule::new(Duration::from_millis(100), Duration::from_millis(200)).seed(7);
    let report = Killer::new(sleeper, schedule)
        .run_for(Duration::from_millis(1_100))
        .await
        .unwrap();
    assert!((5..=11).contains(&report.kills), "{report:?}");
    assert_eq!(report.exits, 0, "{report:?}");
    assert_eq!(
        report.starts,
        report.kills + 1,
        "the last child is stopped, not killed"
    );
}

#[tokio::test]
async fn a_paused_child_is_stopped_until_resumed() {
    let mut child = ChildProcess::spawn(sleeper()).unwrap();
    child.pause().unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(state(&child), 'T');
    child.resume().unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(state(&child), 'S');
    child.stop(Duration::from_secs(1)).await.unwrap();
    assert!(child.has_exited().unwrap());
}

#[tokio::test]
async fn sessions_are_terminated_by_application_name_only() {
    let url = database_url();
    let options: PgConnectOptions = url.parse().unwrap();
    let application = unique_name("fault-kit");
    let pool = |name: &str| {
        PgPoolOptions::new()
            .max_connections(2)
            .connect_with(options.clone().application_name(name))
    };
    let victim = pool(&application)
        .await
        .unwrap_or_else(|e| service_missing("PostgreSQL", &url, &e));
    let bystander = pool(&unique_name("bystander")).await.unwrap();
    let mut held = victim.acquire().await.unwrap();
    sqlx::query("select 1").execute(&mut *held).await.unwrap();
    let other = bystander.acquire().await.unwrap();

    let ended = terminate_postgres_sessions(&bystander, &application)
        .await
        .unwrap();
    assert_eq!(ended, 1);
    let err = sqlx::query("select 1").execute(&mut *held).await;
    assert!(err.is_err(), "the terminated session still answers");
    drop((held, other));
    sqlx::query("select 1").execute(&bystander).await.unwrap();
}
