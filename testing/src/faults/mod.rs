//! Fault injection that touches only what the calling test owns: its own
//! child processes, its own broker connections (found by the connection
//! name the test gave them), its own database sessions (found by their
//! `application_name`), its own private servers.
//!
//! With [`Ledger`](crate::ledger::Ledger), this is what a service's own
//! reliability tests need: run the relay or consumer as a child process,
//! kill it on a schedule, break its connections, then check that no event
//! was lost, none had its effect twice and every key kept its order.
//!
//! ```no_run
//! use std::time::Duration;
//! use tidings_testing::faults::{KillSchedule, Killer};
//! use tokio::process::Command;
//!
//! # async fn run() {
//! // Runs `my-relay`, kills it every 2 to 5 seconds and starts it again,
//! // for a minute.
//! let schedule = KillSchedule::new(Duration::from_secs(2), Duration::from_secs(5));
//! let killer = Killer::new(|| Command::new("my-relay"), schedule);
//! let report = killer.run_for(Duration::from_secs(60)).await.unwrap();
//! assert!(report.kills > 0);
//! # }
//! ```

pub mod harnessless;
mod held_acks;
mod postgres;
mod process;
mod rabbitmq;

pub use held_acks::{HeldAck, HeldAcks};
pub use postgres::terminate_postgres_sessions;
pub use process::{ChildProcess, KillReport, KillSchedule, Killer};
pub use rabbitmq::{close_rabbitmq_connection, rabbitmq_connections_named};
