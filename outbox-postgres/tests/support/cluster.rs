//! A throwaway PostgreSQL cluster on a port of its own, for tests that
//! restart the server or configure it in ways the shared one must not be.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use sqlx::PgPool;
use tidings_testing::names::unique_name;
use tidings_testing::services::service_missing;

/// A PostgreSQL cluster of this test's own, dropped with the value.
pub(crate) struct PrivateCluster {
    version: String,
    name: String,
    port: u16,
}

impl PrivateCluster {
    /// Makes a cluster with `create` off the async runtime, as making one
    /// takes seconds.
    pub(crate) async fn made(create: impl FnOnce() -> Self + Send + 'static) -> Self {
        tokio::task::spawn_blocking(create).await.unwrap()
    }

    /// Stops and drops the cluster off the async runtime.
    pub(crate) async fn remove(self) {
        tokio::task::spawn_blocking(move || drop(self))
            .await
            .unwrap();
    }

    /// A pool of up to `max_connections` on the cluster.
    pub(crate) async fn pool(&self, max_connections: u32) -> PgPool {
        super::connect("private PostgreSQL cluster", &self.url(), max_connections).await
    }

    /// A new cluster with trust authentication, started.
    pub(crate) fn create() -> Self {
        let cluster = Self::created();
        cluster.ctl("start");
        cluster
    }

    /// A new cluster with `wal_level = logical`, for log tailing, started.
    pub(crate) fn create_logical() -> Self {
        let cluster = Self::created();
        std::fs::write(
            cluster.config_dir().join("conf.d").join("logical.conf"),
            "wal_level = logical\nmax_replication_slots = 8\nmax_wal_senders = 8\n",
        )
        .expect("write logical.conf");
        cluster.ctl("start");
        cluster
    }

    /// A new cluster that speaks TLS with the certificate `cert` and its
    /// key `key` (PEM files), started.
    pub(crate) fn create_with_tls(cert: &Path, key: &Path) -> Self {
        let cluster = Self::created();
        let config = cluster.config_dir();
        let owner = std::fs::metadata(&config).expect("cluster configuration directory");
        let install = |from: &Path, name: &str| {
            let to = config.join(name);
            std::fs::copy(from, &to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
            // The server reads its key only when its own user owns it and
            // nobody else can read it.
            std::os::unix::fs::chown(&to, Some(owner.uid()), Some(owner.gid())).expect("chown");
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            to
        };
        let cert = install(cert, "server.pem");
        let key = install(key, "server.key");
        std::fs::write(
            config.join("conf.d").join("tls.conf"),
            format!(
                "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
                cert.display(),
                key.display()
            ),
        )
        .expect("write tls.conf");
        cluster.ctl("start");
        cluster
    }

    fn created() -> Self {
        let version = std::fs::read_dir("/etc/postgresql")
            .ok()
            .and_then(|dir| {
                dir.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .max()
            })
            .unwrap_or_else(|| {
                service_missing(
                    "PostgreSQL (pg_createcluster)",
                    "/etc/postgresql",
                    &"no installed version",
                )
            });
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cluster = Self {
            version,
            name: unique_name("tidings_test"),
            port,
        };
        cluster.run(
            "pg_createcluster",
            &[],
            &["-p", &port.to_string(), "--", "--auth=trust"],
        );
        cluster
    }

    /// The port the cluster listens on, on localhost.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// A URL for the `postgres` user and database.
    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs `pg_ctlcluster` with `action` (`start`, `restart`..).
    pub(crate) fn ctl(&self, action: &str) {
        self.run(
            "pg_ctlcluster",
            &["--skip-systemctl-redirect", "-m", "fast"],
            &[action],
        );
    }

    fn config_dir(&self) -> PathBuf {
        Path::new("/etc/postgresql")
            .join(&self.version)
            .join(&self.name)
    }

    /// Runs `tool [options] <version> <name> [rest]`.
    fn run(&self, tool: &str, options: &[&str], rest: &[&str]) {
        let status = Command::new(tool)
            .args(options)
            .args([self.version.as_str(), self.name.as_str()])
            .args(rest)
            .output()
            .unwrap_or_else(|e| service_missing("PostgreSQL cluster tools", tool, &e));
        assert!(
            status.status.success(),
            "{tool} {rest:?} failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = Command::new("pg_dropcluster")
            .args([self.version.as_str(), self.name.as_str(), "--stop"])
            .output();
    }
}
