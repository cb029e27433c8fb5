//! The operator console: one HTML page with its script and styles, served
//! by the same server as the JSON API it calls, over the same operations
//! as the command line. Nothing is fetched from the internet.
//!
//! The page refreshes itself (every [`refresh`](AdminPage::refresh)),
//! shows when it last did, draws the last hour of samples the server keeps
//! (backlog, published, consumed and parked per second) as inline SVG,
//! lists failed rows (those of the [stored inboxes](AdminPage::stored_inbox)
//! it shows among them) and dead letters one by one with their details, and
//! requeues, replays or deletes the ones selected after a dry-run preview
//! and a confirmation. Each section loads on its own, so one that fails
//! shows its error and the others still render. Started without a token,
//! the page is read-only: it shows no write control and the write API
//! refuses.
//!
//! | route | does |
//! |---|---|
//! | `GET /` | the console |
//! | `GET /api/context` | what the page looks at (database, schema, tenant, broker), whether it is read-only, its refresh interval |
//! | `GET /api/status` | [`Status`](crate::Status) as JSON |
//! | `GET /api/history` | the samples of the last hour, oldest first |
//! | `GET /api/tenants` | every tenant's [`TenantStatus`](crate::TenantStatus), or with `?tenant=T` one tenant's [`Status`](crate::Status); 404 without [`tenants`](AdminPage::tenants) |
//! | `GET /api/failed?route=R` | the failed rows of a route; with `&stored=N`, the failed messages of stored inbox `N`'s consumer `R` |
//! | `POST /api/failed/requeue` `{"route", "ids", "dry_run"}` | requeues the failed rows named (bearer token); with `"stored": N`, stored inbox `N`'s failed messages |
//! | `POST /api/failed/delete` `{"route", "ids", "dry_run"}` | deletes the failed rows named (bearer token); `"stored"` as for requeue |
//! | `GET /api/stored-inboxes` | each [stored inbox](AdminPage::stored_inbox)'s routes (its consumers) as [`RouteStatus`](crate::RouteStatus), or its own error |
//! | `GET /api/dead-letters` | each dead-letter queue's depth and oldest age, or its own error |
//! | `GET /api/dead-letters/list?queue=Q` | a queue's dead letters (`broker`, `id`, `event_type`, `reason`, `older_than_secs`, `limit` narrow it) |
//! | `POST /api/dead-letters/replay` `{"queue", "ids", "dry_run"}` | replays the dead letters named (bearer token) |
//! | `POST /api/dead-letters/delete` `{"queue", "ids", "dry_run"}` | deletes the dead letters named (bearer token) |
//! | `GET /metrics` | the Prometheus text a [`metrics`](AdminPage::metrics) renderer gives, then `tidings_dead_letter_depth` and `tidings_dead_letter_oldest_age_seconds` per queue |
//!
//! An action that names no id is refused, and one naming an id that is not
//! there changes nothing.
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
//! let page = AdminPage::new(Admin::new(store))
//!     .token("from-your-secret-store")
//!     .context("database", "postgres://app@db.internal/orders")
//!     .context("schema", "billing");
//! page.serve("127.0.0.1:8080".parse().unwrap(), std::future::pending()).await?;
//! # Ok(()) }
//! ```

mod access;
mod api;
mod brokers;
mod dead_letters;
mod failed;
mod history;
mod serve;
mod stored;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::{get, post};

use crate::stores::AdminStore;
use crate::{Admin, Tenants};
use brokers::Source;
use history::History;

pub use history::KEPT;

/// The page's HTML, styles and scripts.
const PAGE: &str = include_str!("assets/console.html");
const STYLES: &str = include_str!("assets/console.css");
const SCRIPT: &str = include_str!("assets/console.js");
const CHARTS: &str = include_str!("assets/charts.js");

/// The console over one store, and optionally dead-letter queues of any
/// broker.
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
    pub(crate) dead_letters: Arc<[Source]>,
    /// The stored inboxes shown, by name.
    pub(crate) stored: Arc<[(String, Admin<S>)]>,
    pub(crate) context: Arc<[(String, String)]>,
    pub(crate) refresh: Duration,
    pub(crate) history: Arc<History>,
}

impl<S: Clone> Clone for State<S> {
    fn clone(&self) -> Self {
        Self {
            admin: self.admin.clone(),
            tenants: self.tenants.clone(),
            token: self.token.clone(),
            metrics: self.metrics.clone(),
            dead_letters: self.dead_letters.clone(),
            stored: self.stored.clone(),
            context: self.context.clone(),
            refresh: self.refresh,
            history: self.history.clone(),
        }
    }
}

impl<S: AdminStore + std::fmt::Debug> std::fmt::Debug for AdminPage<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminPage")
            .field("admin", &self.state.admin)
            .field("token", &self.state.token.as_ref().map(|_| "<set>"))
            .field("context", &self.state.context)
            .field("refresh", &self.state.refresh)
            .finish_non_exhaustive()
    }
}

impl<S: AdminStore> AdminPage<S> {
    /// How often the page refreshes itself by default.
    pub const DEFAULT_REFRESH: Duration = Duration::from_secs(5);
    /// How often the server samples for the charts by default.
    pub const DEFAULT_SAMPLE_EVERY: Duration = Duration::from_secs(10);

    /// The page over `admin`, read-only until a [`token`](Self::token) is
    /// set.
    pub fn new(admin: Admin<S>) -> Self {
        Self {
            state: State {
                admin,
                tenants: None,
                token: None,
                metrics: None,
                dead_letters: Arc::new([]),
                stored: Arc::new([]),
                context: Arc::new([]),
                refresh: Self::DEFAULT_REFRESH,
                history: Arc::new(History::new(Self::DEFAULT_SAMPLE_EVERY)),
            },
        }
    }

    /// The bearer token writes need; without one, the page shows no write
    /// control and every write is refused.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.state.token = (!token.is_empty()).then(|| Arc::from(token));
        self
    }

    /// How often the page reloads what it shows; default
    /// [`DEFAULT_REFRESH`](Self::DEFAULT_REFRESH), at least 1 s.
    pub fn refresh(mut self, every: Duration) -> Self {
        self.state.refresh = every.max(Duration::from_secs(1));
        self
    }

    /// How often the server samples the backlog, marks and dead-letter
    /// depths the charts draw; default
    /// [`DEFAULT_SAMPLE_EVERY`](Self::DEFAULT_SAMPLE_EVERY), at least
    /// 100 ms. The last [`KEPT`] of samples are kept.
    pub fn sample_every(mut self, every: Duration) -> Self {
        let every = every.max(Duration::from_millis(100));
        self.state.history = Arc::new(History::new(every));
        self
    }

    /// Shows `value` under `label` at the top of the page, to say what it
    /// looks at: the database (give its URL without the password), the
    /// schema, the tenant, the broker. Repeatable, shown in order.
    pub fn context(mut self, label: impl Into<String>, value: impl Into<String>) -> Self {
        let mut context = self.state.context.to_vec();
        context.push((label.into(), value.into()));
        self.state.context = context.into();
        self
    }

    /// Serves `/metrics` with what `render` returns: the Prometheus text
    /// of the process's recorder, such as
    /// `metrics_exporter_prometheus::PrometheusHandle::render`, so the
    /// relay, monitor and consumer metrics of a service that runs the page
    /// beside them are scraped from the page's address. The relay's
    /// `tidings_relay_published_total` also feeds the published chart.
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

    /// Shows the stored inbox `name` beside the store: `admin` over the
    /// table where consumers with a `StoredInbox` keep what they receive
    /// (a second store naming that table). The page lists its consumers'
    /// pending, in-flight and failed messages, and its failed messages
    /// among the failed rows, each with the reason it was given up on, to
    /// requeue or delete as failed rows are. Call it once per stored inbox.
    ///
    /// ```no_run
    /// # #[cfg(feature = "postgres")]
    /// # fn demo(pool: tidings_postgres::sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// use tidings_admin::{Admin, page::AdminPage};
    /// use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
    ///
    /// let outbox = PgOutboxStore::new(pool.clone(), PgOutboxOptions::new())?;
    /// let kept = PgOutboxOptions::new()
    ///     .table("inbox_messages")
    ///     .inbox_table("inbox_messages_marks");
    /// let kept = PgOutboxStore::new(pool, kept)?;
    /// let page = AdminPage::new(Admin::new(outbox)).stored_inbox("billing", Admin::new(kept));
    /// # Ok(()) }
    /// ```
    pub fn stored_inbox(mut self, name: impl Into<String>, admin: Admin<S>) -> Self {
        let mut stored = self.state.stored.to_vec();
        stored.push((name.into(), admin));
        self.state.stored = stored.into();
        self
    }

    /// Shows, replays and deletes the dead letters of `queues` on
    /// `broker`. Call it once per broker to show several side by side.
    #[cfg(any(feature = "rabbitmq", feature = "sqs", feature = "kafka"))]
    pub fn dead_letters<B>(mut self, broker: B, queues: Vec<String>) -> Self
    where
        B: crate::dead_letters::DeadLetterQueues + Send + Sync + 'static,
    {
        let mut sources = self.state.dead_letters.to_vec();
        sources.push(Source {
            broker: brokers::broker_name::<B>().into(),
            reader: Arc::new(broker),
            queues: queues.into(),
        });
        self.state.dead_letters = sources.into();
        self
    }

    /// The page and its API as an axum router, to nest in your own server.
    /// Within a Tokio runtime it also starts the sampler, which stops when
    /// the router is dropped.
    pub fn router(self) -> Router {
        self.start_sampler();
        Router::new()
            .route("/", get(|| async { Html(PAGE) }))
            .route("/console.css", get(|| asset("text/css", STYLES)))
            .route("/console.js", get(|| asset("text/javascript", SCRIPT)))
            .route("/charts.js", get(|| asset("text/javascript", CHARTS)))
            .route("/api/context", get(api::context::<S>))
            .route("/api/status", get(api::status::<S>))
            .route("/api/history", get(api::history::<S>))
            .route("/api/tenants", get(api::tenants::<S>))
            .route("/api/failed", get(failed::list::<S>))
            .route("/api/failed/{action}", post(failed::act::<S>))
            .route("/api/stored-inboxes", get(stored::list::<S>))
            .route("/api/dead-letters", get(dead_letters::depths::<S>))
            .route("/api/dead-letters/list", get(dead_letters::list::<S>))
            .route("/api/dead-letters/{action}", post(dead_letters::act::<S>))
            .route("/metrics", get(api::metrics::<S>))
            .with_state(self.state)
    }

    fn start_sampler(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                "the admin page's router was built outside a Tokio runtime: its charts stay empty"
            );
            return;
        };
        let sampler = history::Sampler {
            admin: self.state.admin.clone(),
            sources: self.state.dead_letters.clone(),
            metrics: self.state.metrics.clone(),
            history: Arc::downgrade(&self.state.history),
        };
        runtime.spawn(sampler.run());
    }
}

async fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, content_type)], body)
}
