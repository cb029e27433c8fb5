//! One lazily opened connection that reopens with backoff after it drops.

use std::sync::Arc;

use lapin::runtime::default_runtime;
use lapin::types::LongString;
use lapin::uri::AMQPUri;
use lapin::{Channel, Connection, ConnectionProperties};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::handshake;
use crate::options::ConnectionOptions;

/// Hands out the current connection, reconnecting when it has dropped.
///
/// Channels keep their connection alive, so replacing the connection never
/// disturbs channels still in use on the old one; they fail on their own
/// and their unsettled deliveries go back to the queue.
#[derive(Clone)]
pub(crate) struct Connector {
    options: Arc<ConnectionOptions>,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    connection: Option<Arc<Connection>>,
    failures: u32,
    next_attempt: Option<Instant>,
    last_error: Option<lapin::Error>,
}

impl Connector {
    pub(crate) fn new(options: ConnectionOptions) -> Self {
        Self {
            options: Arc::new(options),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    pub(crate) fn options(&self) -> &ConnectionOptions {
        &self.options
    }

    /// The live connection, opening a new one if there is none. While the
    /// reconnect backoff after a failed attempt runs, it fails at once with
    /// the last error: publishes are rescheduled by the relay, and consuming
    /// streams wait out their own backoff.
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>, lapin::Error> {
        let mut state = self.state.lock().await;
        if let Some(conn) = &state.connection {
            if conn.status().connected() {
                return Ok(conn.clone());
            }
            tracing::info!(
                messaging.system = "rabbitmq",
                connection_name = %self.options.connection_name,
                "connection lost, reconnecting"
            );
            state.connection = None;
        }
        let backing_off = state.next_attempt.is_some_and(|at| at > Instant::now());
        if let (true, Some(error)) = (backing_off, &state.last_error) {
            return Err(error.clone());
        }
        match self.open().await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                *state = State {
                    connection: Some(conn.clone()),
                    ..State::default()
                };
                Ok(conn)
            }
            Err(error) => {
                state.failures += 1;
                let delay = self.options.reconnect_backoff.delay(state.failures);
                state.next_attempt = Some(Instant::now() + delay);
                state.last_error = Some(error.clone());
                tracing::error!(
                    messaging.system = "rabbitmq",
                    connection_name = %self.options.connection_name,
                    error = %error,
                    retry_in = ?delay,
                    "cannot connect to the broker"
                );
                Err(error)
            }
        }
    }

    /// A new channel on the live connection.
    pub(crate) async fn channel(&self) -> Result<Channel, lapin::Error> {
        let conn = self.connection().await?;
        conn.create_channel().await
    }

    async fn open(&self) -> Result<Connection, lapin::Error> {
        let uri: AMQPUri = self.options.url.parse().map_err(|reason| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("invalid broker URL: {reason}"),
            )
        })?;
        let tls = handshake::config(&self.options.tls, &uri)?;
        let name = LongString::from(self.options.connection_name.as_str());
        let properties = ConnectionProperties::default().with_connection_name(name);
        let connect =
            Connection::connect_uri_with_config(uri.clone(), properties, tls, default_runtime()?);
        match tokio::time::timeout(self.options.connect_timeout, connect).await {
            Ok(result) => result.map_err(|error| handshake::explain(error, &uri)),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within {:?}", self.options.connect_timeout),
            )
            .into()),
        }
    }
}
