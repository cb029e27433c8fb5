//! The HTTP server as a step of the lifecycle plan, so the signal that
//! stops the relay and the consumer stops it too, and first.

use std::net::SocketAddr;
use std::sync::Mutex;

use axum::Router;
use futures::FutureExt;
use futures::future::BoxFuture;
use tidings::lifecycle::{Step, StepError};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Serves `app` until cancelled, then stops accepting connections, closes
/// idle ones and returns once the requests in flight have been answered.
pub(crate) struct HttpServer {
    /// The listener bound at start, taken by the first run.
    listener: Mutex<Option<TcpListener>>,
    /// Where a restarted run listens again.
    address: SocketAddr,
    app: Router,
}

impl HttpServer {
    /// A server on `listener`, bound before the plan starts so the address
    /// is known (and taken) up front.
    pub(crate) fn new(listener: TcpListener, app: Router) -> std::io::Result<Self> {
        Ok(Self {
            address: listener.local_addr()?,
            listener: Mutex::new(Some(listener)),
            app,
        })
    }

    async fn serve(&self, cancel: CancellationToken) -> Result<(), StepError> {
        let bound = self
            .listener
            .lock()
            .map_err(|_| "listener lock poisoned")?
            .take();
        let listener = match bound {
            Some(listener) => listener,
            None => TcpListener::bind(self.address).await?,
        };
        tracing::info!(address = %self.address, "serving HTTP");
        axum::serve(listener, self.app.clone())
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await?;
        tracing::info!("HTTP server stopped; requests in flight answered");
        Ok(())
    }
}

impl Step for HttpServer {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        self.serve(cancel).boxed()
    }
}
