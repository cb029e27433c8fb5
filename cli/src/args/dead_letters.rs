//! `tidings dead-letters`: which dead letters, and what to do with them.

use std::time::Duration;

use clap::{Args, Subcommand};

/// What to do with dead letters.
#[derive(Debug, Subcommand)]
pub(crate) enum DeadLetterAction {
    /// Dead-letter queue depths, or with a filter the messages, left in place.
    List(DeadLetterArgs),
    /// One dead letter with its headers, reason and body, left in place.
    Show {
        /// The queue the message was parked from (not its dead-letter queue).
        #[arg(long)]
        queue: String,
        /// The message id (the event id for tidings' messages).
        id: String,
    },
    /// Send dead letters back to the queue they were parked from, with a
    /// fresh delivery count and the reason in x-tidings-replayed-reason.
    /// Safe to run again after a failure.
    Replay {
        #[command(flatten)]
        filter: DeadLetterArgs,
        /// At most this many messages a second.
        #[arg(long)]
        rate: Option<f64>,
        /// Only say which messages would go.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete dead letters. Needs a filter or --all; lists what would go and
    /// asks first (--yes to skip).
    Purge {
        #[command(flatten)]
        filter: DeadLetterArgs,
        /// Delete every dead letter of the queue (up to --limit).
        #[arg(long, required_unless_present_any = ["event_type", "older_than", "reason", "id"])]
        all: bool,
        /// Only say which messages would go.
        #[arg(long)]
        dry_run: bool,
        /// Delete without asking; needed where there is no terminal to ask on.
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// Which dead letters.
#[derive(Debug, Args)]
pub(crate) struct DeadLetterArgs {
    /// The queue the messages were parked from (not its dead-letter queue).
    #[arg(long)]
    pub(crate) queue: String,
    /// Only messages of this event type.
    #[arg(long)]
    pub(crate) event_type: Option<String>,
    /// Only messages sent at least this long ago (e.g. 1h).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) older_than: Option<Duration>,
    /// Only messages whose parking reason contains this text.
    #[arg(long)]
    pub(crate) reason: Option<String>,
    /// Only these message ids (repeatable).
    #[arg(long)]
    pub(crate) id: Vec<String>,
    /// At most this many messages.
    #[arg(long, default_value_t = 1000)]
    pub(crate) limit: usize,
}
