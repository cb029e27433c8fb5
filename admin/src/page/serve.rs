//! Binding and serving the page on its own.

use std::future::Future;
use std::net::SocketAddr;

use super::AdminPage;
use crate::AdminError;
use crate::stores::AdminStore;

impl<S: AdminStore> AdminPage<S> {
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
    ///
    /// # Errors
    ///
    /// [`AdminError::Io`] when the server stops on a socket error.
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
