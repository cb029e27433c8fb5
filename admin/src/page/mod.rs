//! The admin page: one HTML page with a little JavaScript, and the JSON API
//! it calls, over the same operations as the command line.
//!
//! | route | does |
//! |---|---|
//! | `GET /` | the page: backlog per route, failed rows with their reasons, the inbox, dead-letter depths |
//! | `GET /api/status` | [`Status`](crate::Status) as JSON |
//! | `GET /api/tenants` | every tenant's [`TenantStatus`](crate::TenantStatus), or with `?tenant=T` one tenant's [`Status`](crate::Status); 404 without [`tenants`](AdminPage::tenants) |
//! | `GET /api/failed?route=R` | the failed rows of a route |
//! | `GET /api/dead-letters` | the depth of each dead-letter queue the page was given |
//! | `POST /api/requeue` `{"route": R}` | requeues the route's failed rows (bearer token) |
//! | `POST /api/replay` `{"queue": Q}` | replays the queue's dead letters (bearer token) |
//! | `GET /metrics` | the Prometheus exposition a [`metrics`](AdminPage::metrics) renderer gives, or 404 without one |
//!
//! It binds to 127.0.0.1 by default. Writes need the bearer token given at
//! start; reads do not, so [`AdminPage::serve`] refuses a non-loopback
//! address unless a token is set. The page holds no secret: the operator
//! types the token into it.
//!
//! ```no_run
//! # #[cfg(feature = "postgres")]
//! # async fn demo(store: tidings_postgres::PgOutboxStore) -> Result<(), tidings_admin::AdminError> {
//! use tidings_admin::{Admin, page::AdminPage};
//!
//! let page = AdminPage::new(Admin::new(store)).token("from-your-secret-store");
//! page.serve("127.0.0.1:8080".parse().unwrap(), std::future::pending()).await?;
//! # Ok(()) }
//! ```

mod api;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::response::Html;
use axum::routing::{get, post};

use crate::stores::AdminStore;
use crate::{Admin, AdminError, Tenants};

/// The page's HTML and script.
const PAGE: &str = include_str!("page.html");

/// The admin page over one store, and optionally RabbitMQ dead-letter
/// queues.
pub struct AdminPage<S> {
    state: State<S>,
}

/// Renders the metrics in the Prometheus text format.
type Render = Arc<dyn Fn() -> String + Send + Sync>;

pub(crate) struct State<S> {
    pub(crate) admin: Admin<S>,
    pub(crate) tenants: Option<Arc<Tenants<S>>>,
    pub(crate) token: Option<Arc<str>>,
    pub(crate) metrics: Option<Render>,
    #[cfg(feature = "rabbitmq")]
    pub(crate) dead_letters: Option<(Arc<crate::dead_letters::RabbitDeadLetters>, Arc<[String]>)>,
}

impl<S: Clone> Clone for State<S> {
    fn clone(&self) -> Self {
        Self {
            admin: self.admin.clone(),
            tenants: self.tenants.clone(),
            token: self.token.clone(),
            metrics: self.metrics.clone(),
            #[cfg(feature = "rabbitmq")]
            dead_letters: self.dead_letters.clone(),
        }
    }
}

impl<S: AdminStore + std::fmt::Debug> std::fmt::Debug for AdminPage<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminPage")
            .field("admin", &self.state.admin)
            .field("token", &self.state.token.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl<S: AdminStore> AdminPage<S> {
    /// The page over `admin`, read-only until a [`token`](Self::token) is
    /// set.
    pub fn new(admin: Admin<S>) -> Self {
        Self {
            state: State {
                admin,
                tenants: None,
                token: None,
                metrics: None,
                #[cfg(feature = "rabbitmq")]
                dead_letters: None,
            },
        }
    }

    /// The bearer token writes need; without one, every write is refused.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.state.token = (!token.is_empty()).then(|| Arc::from(token));
        self
    }

    /// Serves `/metrics` with what `render` returns: the Prometheus text
    /// of the process's recorder, such as
    /// `metrics_exporter_prometheus::PrometheusHandle::render`, so the
    /// relay, monitor and consumer metrics of a service that runs the page
    /// beside them are scraped from the page's address.
    pub fn metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.state.metrics = Some(Arc::new(render));
        self
    }

    /// Serves the status of each of `tenants`' stores at `/api/tenants`,
    /// for a service with a store per tenant.
    pub fn tenants(mut self, tenants: Tenants<S>) -> Self {
        self.state.tenants = Some(Arc::new(tenants));
        self
    }

    /// Shows and replays the dead-letter queues of `queues` on `broker`.
    #[cfg(feature = "rabbitmq")]
    pub fn dead_letters(
        mut self,
        broker: crate::dead_letters::RabbitDeadLetters,
        queues: Vec<String>,
    ) -> Self {
        self.state.dead_letters = Some((Arc::new(broker), queues.into()));
        self
    }

    /// The page and its API as an axum router, to nest in your own server.
    pub fn router(self) -> Router {
        Router::new()
            .route("/", get(|| async { Html(PAGE) }))
            .route("/api/status", get(api::status::<S>))
            .route("/api/tenants", get(api::tenants::<S>))
            .route("/api/failed", get(api::failed::<S>))
            .route("/api/dead-letters", get(api::dead_letters::<S>))
            .route("/api/requeue", post(api::requeue::<S>))
            .route("/api/replay", post(api::replay::<S>))
            .route("/metrics", get(api::metrics::<S>))
            .with_state(self.state)
    }

    /// Serves the page on `address` until `shutdown` completes.
    ///
    /// # Errors
    ///
    /// [`AdminError::Invalid`] for a non-loopback address without a token;
    /// [`AdminError::Io`] when the address cannot be bound.
    pub async fn serve(
        self,
        address: SocketAddr,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), AdminError> {
        let listener = self.bind(address).await?;
        self.serve_on(listener, shutdown).await
    }

    /// Binds `address`, refusing a non-loopback one without a token.
    ///
    /// # Errors
    ///
    /// As [`serve`](Self::serve).
    pub async fn bind(&self, address: SocketAddr) -> Result<tokio::net::TcpListener, AdminError> {
        if !address.ip().is_loopback() && self.state.token.is_none() {
            return Err(AdminError::Invalid(format!(
                "refusing to serve the admin page on {address}, which is not a loopback address, without a token; set one or bind 127.0.0.1"
            )));
        }
        tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| AdminError::Io(format!("cannot listen on {address}"), e))
    }

    /// Serves the page on a bound listener until `shutdown` completes.
    pub async fn serve_on(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), AdminError> {
        if let Ok(address) = listener.local_addr() {
            tracing::info!(%address, "admin page listening");
        }
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| AdminError::Io("the admin page stopped".into(), e))
    }
}
