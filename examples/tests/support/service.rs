//! The `axum_service` binary as a child process, stopped by SIGTERM to its
//! PID.

use std::net::SocketAddr;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tidings_testing::services::{amqp_url, database_url};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::Names;

/// How long the service gets to migrate, declare and start listening.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `axum_service`; killed if dropped while still running.
pub(crate) struct Service {
    child: Child,
    /// Where it serves HTTP.
    pub(crate) address: SocketAddr,
}

impl Service {
    /// Starts the service on a free port with the test's own schema and
    /// queue, and waits for its `listening on http://..` line.
    pub(crate) async fn start(names: &Names) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_axum_service"))
            .env("DATABASE_URL", database_url())
            .env("AMQP_URL", amqp_url())
            .env("LISTEN_ADDR", "127.0.0.1:0")
            .env("ORDERS_SCHEMA", &names.schema)
            .env("ORDERS_QUEUE", &names.queue)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start axum_service");
        let stdout = child.stdout.take().expect("the service's stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(START_TIMEOUT, lines.next_line())
            .await
            .expect("axum_service did not start listening within 60 s")
            .expect("read the service's stdout");
        let Some(line) = first else {
            let status = child.wait().await.expect("wait for axum_service");
            panic!("axum_service exited before listening ({status}); see its log above");
        };
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from axum_service: {line}"));
        Self { child, address }
    }

    /// Sends SIGTERM to the service's PID.
    pub(crate) fn terminate(&self) {
        let pid = self.child.id().expect("the service is running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
    }

    /// Whether the process is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("poll axum_service").is_none()
    }

    /// Waits for the process to exit, at most `deadline`.
    pub(crate) async fn exit_within(&mut self, deadline: Duration) -> ExitStatus {
        tokio::time::timeout(deadline, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("axum_service still running {deadline:?} after SIGTERM"))
            .expect("wait for axum_service")
    }

    /// Whether a new TCP connection to the service is refused.
    pub(crate) async fn refuses_connections(&self) -> bool {
        tokio::net::TcpStream::connect(self.address).await.is_err()
    }
}
