//! Where the log-tailing relay reads from, and how.

use std::path::PathBuf;
use std::time::Duration;

use percent_encoding::percent_decode_str;
use pgwire_replication::{Lsn, ReplicationConfig, TlsConfig};
use tidings_core::{OutboxSpec, Route, StoreError, settings};

use crate::tailing::{MAX_MESSAGE_BYTES, Tailing};

/// Options of a [`WalStore`](super::WalStore): the server its replication
/// connection reaches, the routes it relays and its limits.
///
/// ```
/// use tidings_core::OutboxSpec;
/// use tidings_postgres::wal::WalOptions;
///
/// static EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
///
/// let options = WalOptions::new("postgres://relay:secret@db.internal:5432/shop?sslmode=require")?
///     .route(&EVENTS)
///     .max_window(20_000);
/// assert_eq!(options.get_max_window(), 20_000);
/// # Ok::<_, tidings_core::StoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WalOptions {
    target: Target,
    routes: Vec<Route>,
    max_window: usize,
    max_window_bytes: usize,
    takeover_interval: Duration,
    confirm_interval: Duration,
}

/// The replication connection's server, as a `postgres://` URL gives it.
#[derive(Debug, Clone)]
struct Target {
    host: String,
    port: u16,
    user: String,
    password: String,
    database: String,
    tls: TlsConfig,
}

impl WalOptions {
    /// Default [`max_window`](Self::max_window).
    pub const DEFAULT_MAX_WINDOW: usize = 50_000;
    /// Default [`max_window_bytes`](Self::max_window_bytes): 256 MiB.
    pub const DEFAULT_MAX_WINDOW_BYTES: usize = 256 << 20;
    /// Default [`takeover_interval`](Self::takeover_interval).
    pub const DEFAULT_TAKEOVER_INTERVAL: Duration = Duration::from_secs(1);
    /// Default [`confirm_interval`](Self::confirm_interval).
    pub const DEFAULT_CONFIRM_INTERVAL: Duration = Duration::from_millis(200);

    /// Options reaching the server at `url`
    /// (`postgres://user:password@host:port/database`, with `sslmode`
    /// `disable`, `require`, `verify-ca` or `verify-full` and `sslrootcert`
    /// among its parameters). The user needs the `REPLICATION` attribute.
    ///
    /// # Errors
    ///
    /// [`StoreError::Invalid`] when the URL is not a `postgres://` URL
    /// naming a host and a database, or names an `sslmode` it cannot honour.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            target: Target::parse(url)?,
            routes: Vec::new(),
            max_window: Self::DEFAULT_MAX_WINDOW,
            max_window_bytes: Self::DEFAULT_MAX_WINDOW_BYTES,
            takeover_interval: Self::DEFAULT_TAKEOVER_INTERVAL,
            confirm_interval: Self::DEFAULT_CONFIRM_INTERVAL,
        })
    }

    /// Relays `spec`'s route: its events are claimed by relays of it. An
    /// event of a route no relay of the slot serves is failed into the
    /// outbox table, where it can be requeued once one does.
    pub fn route<T, C>(self, spec: &OutboxSpec<T, C>) -> Self {
        self.untyped_route(spec.route().clone())
    }

    /// Relays an untyped route.
    pub fn untyped_route(mut self, route: Route) -> Self {
        self.routes.retain(|r| r.name != route.name);
        self.routes.push(route);
        self
    }

    /// The routes relayed.
    pub fn get_routes(&self) -> &[Route] {
        &self.routes
    }

    /// The replication connection's settings for `tailing`, starting at
    /// `start`.
    pub(crate) fn replication(&self, tailing: &Tailing, start: u64) -> ReplicationConfig {
        let t = &self.target;
        ReplicationConfig::new(
            t.host.clone(),
            t.user.clone(),
            t.password.clone(),
            t.database.clone(),
            tailing.slot.clone(),
            tailing.publication.clone(),
        )
        .with_port(t.port)
        .with_tls(t.tls.clone())
        .with_binary(true)
        .with_start_lsn(Lsn::from_u64(start))
        .with_ack_lsn(Lsn::from_u64(start))
        .with_status_interval(self.confirm_interval)
        .with_wakeup_interval(Duration::from_secs(1))
        .with_max_message_size(MAX_MESSAGE_BYTES + 4096)
        .with_application_name(format!("tidings relay {}", tailing.slot))
    }
}

settings!(WalOptions {
    /// The most events read and not yet finished (at least 1): past it
    /// the relay reads no further until some finish. A retry waits in the
    /// window, so a broker that refuses everything stops the reading once
    /// the window is full, and the slot retains the WAL meanwhile.
    /// Default [`DEFAULT_MAX_WINDOW`](Self::DEFAULT_MAX_WINDOW).
    max_window(max: usize) = max.max(1), get_max_window: usize;
    /// The most payload bytes of the events in the window (at least 1):
    /// past it the relay reads no further until some finish, so large
    /// events bound the memory they take. One event larger than the bound
    /// is still read. Default
    /// [`DEFAULT_MAX_WINDOW_BYTES`](Self::DEFAULT_MAX_WINDOW_BYTES).
    max_window_bytes(max: usize) = max.max(1), get_max_window_bytes: usize;
    /// How often a relay standing by, whose slot another relay reads, tries
    /// to take it over. Default
    /// [`DEFAULT_TAKEOVER_INTERVAL`](Self::DEFAULT_TAKEOVER_INTERVAL).
    takeover_interval(interval: Duration), get_takeover_interval: Duration;
    /// How often the relay records how far it finished and confirms it to
    /// the slot, which then releases the WAL before it. Default
    /// [`DEFAULT_CONFIRM_INTERVAL`](Self::DEFAULT_CONFIRM_INTERVAL).
    confirm_interval(interval: Duration), get_confirm_interval: Duration;
});

impl Target {
    fn parse(raw: &str) -> Result<Self, StoreError> {
        let invalid = |why: &str| StoreError::Invalid(format!("replication URL: {why}"));
        let url = url::Url::parse(raw).map_err(|e| invalid(&e.to_string()))?;
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(invalid("the scheme is not postgres://"));
        }
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        let host = url.host_str().ok_or_else(|| invalid("no host"))?;
        let database = decode(url.path().trim_start_matches('/'));
        if database.is_empty() {
            return Err(invalid("no database"));
        }
        let mut sslmode = String::from("disable");
        let mut root: Option<PathBuf> = None;
        for (name, value) in url.query_pairs() {
            match &*name {
                "sslmode" => sslmode = value.into_owned(),
                "sslrootcert" => root = Some(PathBuf::from(&*value)),
                _ => {}
            }
        }
        let tls = match sslmode.as_str() {
            "disable" => TlsConfig::disabled(),
            "require" => TlsConfig::require(),
            "verify-ca" => TlsConfig::verify_ca(root),
            "verify-full" => TlsConfig::verify_full(root),
            other => {
                return Err(invalid(&format!(
                    "sslmode {other:?} is not one of disable, require, verify-ca, verify-full"
                )));
            }
        };
        Ok(Self {
            host: host.trim_matches(['[', ']']).to_owned(),
            port: url.port().unwrap_or(5432),
            user: match url.username() {
                "" => "postgres".to_owned(),
                user => decode(user),
            },
            password: url.password().map(decode).unwrap_or_default(),
            database,
            tls,
        })
    }
}

#[cfg(test)]
mod tests;
