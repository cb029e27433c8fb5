//! What the axum example's test needs: the service as a child process, an
//! HTTP client, and the names the test owns.

pub(crate) mod client;
pub(crate) mod service;

use tidings_testing::names::unique_name;

/// The schema and queue one test owns, unique so tests run in parallel.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    /// The PostgreSQL schema (outbox, inbox, orders, invoices).
    pub(crate) schema: String,
    /// The RabbitMQ queue the events go to.
    pub(crate) queue: String,
}

impl Names {
    /// Fresh names with a random suffix.
    pub(crate) fn unique() -> Self {
        let name = unique_name("axum_service");
        Self {
            schema: name.clone(),
            queue: name,
        }
    }
}
