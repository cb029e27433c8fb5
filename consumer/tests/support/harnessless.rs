//! What the test files that are their own harness (`harness = false`)
//! share: one binary that is the parent test when run plainly and a child
//! process when an environment variable carries its configuration.

use std::future::Future;
use std::io::Write;
use std::time::Instant;

use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
use tidings_testing::services::postgres_pool;

/// Runs `child` with the value of `child_env` when it is set; otherwise
/// runs `test`, named `name`, and prints its line with the figures it
/// returns and how long it took.
pub(crate) fn run<C, T>(
    child_env: &str,
    name: &str,
    child: impl FnOnce(String) -> C,
    test: impl FnOnce() -> T,
) where
    C: Future<Output = ()>,
    T: Future<Output = String>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match std::env::var(child_env) {
        Ok(config) => runtime.block_on(child(config)),
        Err(_) => {
            let started = Instant::now();
            let figures = runtime.block_on(test());
            let mut err = std::io::stderr();
            writeln!(
                err,
                "test {name} ... ok ({figures}, {:.1} s)",
                started.elapsed().as_secs_f64()
            )
            .unwrap();
        }
    }
}

/// `text` for the rest of the process, for the specs' `&'static str`s.
pub(crate) fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

/// A store on the test database in `schema`.
pub(crate) async fn store_in(schema: &str) -> PgOutboxStore {
    let pool = postgres_pool(8).await;
    PgOutboxStore::new(pool, PgOutboxOptions::new().schema(schema.to_owned())).unwrap()
}
