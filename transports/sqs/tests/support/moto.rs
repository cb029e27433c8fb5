//! A private moto server on a free port, for tests that pause their
//! server: the shared one on 4566 is never touched.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tidings_testing::services::service_missing;

/// A moto server this test started; stopped by its PID when dropped.
pub struct PrivateMoto {
    child: Child,
    port: u16,
}

impl PrivateMoto {
    /// Starts moto on a free port and waits until it answers.
    pub async fn start() -> Self {
        let binary = moto_binary();
        let port = free_port();
        let child = Command::new(&binary)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| service_missing("moto", &binary.display().to_string(), &e));
        let moto = Self { child, port };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if tokio::time::Instant::now() > deadline {
                service_missing(
                    "private moto",
                    &moto.endpoint(),
                    &"port did not open in 60 s",
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        moto
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Freezes the server (SIGSTOP): connections open, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets it run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {}", self.child.id());
    }
}

impl Drop for PrivateMoto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `MOTO_SERVER`, else the one `scripts/setup-services.sh` installs.
fn moto_binary() -> PathBuf {
    if let Ok(path) = std::env::var("MOTO_SERVER") {
        return PathBuf::from(path);
    }
    let services = std::env::var("TIDINGS_SERVICES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".to_owned());
            PathBuf::from(home).join(".cache/tidings-services")
        });
    let binary = services.join("venv/bin/moto_server");
    if !binary.exists() {
        service_missing("moto", &binary.display().to_string(), &"not installed");
    }
    binary
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}
