//! `tidings serve`: the admin page.

use std::time::Duration;

use clap::Args;

/// The admin page.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on; anything but loopback needs a token.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) bind: std::net::SocketAddr,
    /// The bearer token writes need; without one the page is read-only.
    #[arg(long, env = "TIDINGS_ADMIN_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// A queue of the --broker whose dead letters the console shows,
    /// replays and deletes (repeatable).
    #[arg(long)]
    pub(crate) dead_letter_queue: Vec<String>,
    /// How often the console refreshes itself (e.g. 5s, 1m).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub(crate) refresh: Duration,
    /// The tenant this store belongs to, shown at the top of the console.
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// A stored inbox the console shows beside the store, as NAME=TABLE:
    /// the table (MongoDB: collection) beside the outbox where consumers
    /// with a stored inbox keep what they receive (repeatable).
    #[arg(long, value_name = "NAME=TABLE", value_parser = stored_inbox)]
    pub(crate) stored_inbox: Vec<(String, String)>,
}

/// A `--stored-inbox` value: its name and its table.
fn stored_inbox(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((name, table)) if !name.is_empty() && !table.is_empty() => {
            Ok((name.to_owned(), table.to_owned()))
        }
        _ => Err(format!(
            "{value:?} is not NAME=TABLE, such as billing=inbox_messages"
        )),
    }
}
