//! The bench's `tracing` subscriber: warnings to stderr, and with the
//! `otel` feature an OpenTelemetry layer that exports every messaging span
//! to a no-op exporter while [`set_exporting`] says so.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Installs the subscriber.
pub(crate) fn init() {
    let logs =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn,sqlx::query=error".into());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(logs);
    let registry = tracing_subscriber::registry().with(fmt);
    #[cfg(feature = "otel")]
    let registry = registry.with(otel::layer());
    registry.init();
}

#[cfg(feature = "otel")]
pub(crate) use otel::set_exporting;

#[cfg(feature = "otel")]
mod otel {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
    use tracing::{Level, Metadata};
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::filter_fn;

    static EXPORTING: AtomicBool = AtomicBool::new(false);

    /// Turns the OpenTelemetry layer on or off for the spans opened from
    /// now on.
    pub(crate) fn set_exporting(on: bool) {
        EXPORTING.store(on, Relaxed);
    }

    /// Takes batches of spans and drops them: the cost of recording and
    /// batching spans without that of a network.
    #[derive(Debug)]
    struct NoopExporter;

    impl SpanExporter for NoopExporter {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            drop(batch);
            Ok(())
        }
    }

    /// What a service tracing its messaging would record: `info` and up,
    /// and tidings' own spans from `debug` (the `create` spans).
    fn recorded(meta: &Metadata<'_>) -> bool {
        if !EXPORTING.load(Relaxed) {
            return false;
        }
        match meta.target().starts_with("tidings") {
            true => *meta.level() <= Level::DEBUG,
            false => *meta.level() <= Level::INFO,
        }
    }

    /// The OpenTelemetry layer, batching into the no-op exporter and
    /// recording only while exporting is on (the filter is asked for each
    /// span, not once per call site).
    pub(super) fn layer<S>() -> impl Layer<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(NoopExporter)
            .build();
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tidings-bench"))
            .with_filter(filter_fn(recorded))
    }
}
