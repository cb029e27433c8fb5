//! `tidings inbox`: one consumer's marks.

use std::time::Duration;

use clap::Subcommand;
use uuid::Uuid;

/// The inbox.
#[derive(Debug, Subcommand)]
pub(crate) enum InboxCommand {
    /// Whether a consumer handled an event: when, or the attempts on it
    /// so far. Exits 0 when handled, 1 when not.
    Show {
        /// The consumer.
        #[arg(long)]
        consumer: String,
        /// The event id.
        #[arg(long)]
        event_id: Uuid,
    },
    /// Delete one consumer's marks (and attempt counts) older than an age.
    /// A redelivery of an event whose mark is gone is handled again.
    Purge {
        /// The consumer.
        #[arg(long)]
        consumer: String,
        /// Only marks at least this old (e.g. 30d).
        #[arg(long, value_parser = humantime::parse_duration)]
        older_than: Duration,
        /// Marks deleted per statement.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
    },
}
