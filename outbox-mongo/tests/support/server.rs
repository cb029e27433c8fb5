//! A private SecantusDB server on a port of its own, for tests that break
//! things: only they see it, and it is stopped by its PID.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tidings_testing::services::SETUP_COMMAND;

/// A server process this test started.
pub(crate) struct PrivateServer {
    child: Child,
    port: u16,
}

impl PrivateServer {
    /// Starts a server with in-memory storage and `args`, and waits until
    /// it accepts connections.
    pub(crate) fn start(args: &[&str]) -> Self {
        let port = free_port();
        let binary = secantus_binary();
        let child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--storage-path", ":memory:", "--log-level", "WARNING"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}); install it with: {SETUP_COMMAND}",
                    binary.display()
                )
            });
        let server = Self { child, port };
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "private server on {port} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Its URL, as a one-node replica set.
    pub(crate) fn url(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?replicaSet=secantus", self.port)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        // SIGTERM by PID stops it cleanly; the wait reaps it.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// The server binary in the virtualenv the setup script installs.
fn secantus_binary() -> PathBuf {
    let dir = std::env::var("TIDINGS_SERVICES_DIR").map_or_else(
        |_| {
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
            PathBuf::from(home).join(".cache/tidings-services")
        },
        PathBuf::from,
    );
    dir.join("venv/bin/secantusd-py")
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
