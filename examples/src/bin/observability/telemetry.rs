//! Where traces and metrics go: an OTLP exporter configured from the
//! standard `OTEL_*` variables, and a Prometheus recorder served over HTTP.

use std::time::Duration;

use anyhow::Context;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tokio::net::TcpListener;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// Histogram buckets in seconds, from a fast handler to a handler timeout.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The exporting side of tracing; flush it with
/// [`shutdown`](Self::shutdown) before exiting.
pub(crate) struct Traces(Option<SdkTracerProvider>);

impl Traces {
    /// Exports the spans still buffered.
    pub(crate) fn shutdown(self) {
        if let Some(provider) = self.0 {
            if let Err(error) = provider.shutdown() {
                tracing::warn!(%error, "flushing traces failed");
            }
        }
    }
}

/// Logs to stderr as `RUST_LOG` says (`info` by default) and exports the
/// spans of every messaging operation over OTLP/HTTP, unless
/// `OTEL_TRACES_EXPORTER=none`.
pub(crate) fn init_tracing() -> anyhow::Result<Traces> {
    let logs = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let provider = match std::env::var("OTEL_TRACES_EXPORTER").as_deref() {
        Ok("none") => None,
        _ => Some(otlp_provider()?),
    };
    let spans = provider.as_ref().map(|provider| {
        let tracer = provider.tracer("tidings-observability");
        let messaging = Targets::new()
            .with_default(tracing::Level::INFO)
            .with_target("tidings_core", tracing::Level::DEBUG)
            .with_target("tidings_consumer", tracing::Level::DEBUG);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(messaging)
    });
    tracing_subscriber::registry()
        .with(fmt::layer().with_writer(std::io::stderr).with_filter(logs))
        .with(spans)
        .init();
    Ok(Traces(provider))
}

/// A tracer provider exporting in batches to the collector the `OTEL_*`
/// variables name, its service named by `OTEL_SERVICE_NAME` or
/// `tidings-observability`.
fn otlp_provider() -> anyhow::Result<SdkTracerProvider> {
    let exporter = SpanExporter::builder()
        .with_http()
        .build()
        .context("building the OTLP exporter from the OTEL_* variables")?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("tidings-observability");
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// Installs the Prometheus recorder every metric of tidings goes to.
pub(crate) fn prometheus() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets(&BUCKETS)?
        .install_recorder()
        .context("installing the Prometheus recorder")?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

/// Serves the metrics as Prometheus text on `/metrics`.
pub(crate) async fn serve_metrics(listener: TcpListener, handle: PrometheusHandle) {
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || std::future::ready(handle.render())),
    );
    if let Err(error) = axum::serve(listener, app).await {
        tracing::error!(%error, "the metrics endpoint stopped");
    }
}
