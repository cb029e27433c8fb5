//! Runnable tidings programs, one per scenario, in `src/bin/`. Each file's
//! first lines say how to run it.
//!
//! This library holds what the programs share.

use tracing_subscriber::EnvFilter;

#[cfg(feature = "postgres")]
pub mod billing;
#[cfg(feature = "postgres")]
pub mod database;
pub mod orders;
#[cfg(feature = "postgres")]
pub mod placing;

/// Logs to stderr at `info`, or as `RUST_LOG` says.
pub fn init_tracing() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// The value of the environment variable `name`, or `default` when it is
/// not set.
pub fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}
