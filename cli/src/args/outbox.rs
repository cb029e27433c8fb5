//! `tidings failed` and `tidings purge`: the outbox rows they act on.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use uuid::Uuid;

/// Failed rows.
#[derive(Debug, Subcommand)]
pub(crate) enum FailedCommand {
    /// List the failed rows of a route, oldest failure first.
    List(FailedArgs),
    /// Show one failed row with its payload and reason.
    Show {
        /// The route.
        #[arg(long)]
        route: String,
        /// The event id.
        id: Uuid,
    },
    /// Move failed rows back to pending with fresh attempt counts. Needs a
    /// filter or --all.
    Requeue {
        #[command(flatten)]
        filter: FailedArgs,
        /// Requeue every failed row of the route (up to --limit).
        #[arg(long, required_unless_present_any = ["event_type", "older_than", "id"])]
        all: bool,
        /// Only say how many rows would move.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete failed rows by event id, for good: their events are never
    /// published. Shows them and asks first (--yes without a terminal).
    Delete(crate::failed_commands::DeleteArgs),
}

/// Which failed rows.
#[derive(Debug, Args)]
pub(crate) struct FailedArgs {
    /// The route.
    #[arg(long)]
    pub(crate) route: String,
    /// Only rows of this event type.
    #[arg(long)]
    pub(crate) event_type: Option<String>,
    /// Only rows that failed at least this long ago (e.g. 30m, 2h, 7d).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) older_than: Option<Duration>,
    /// Only these event ids (repeatable).
    #[arg(long)]
    pub(crate) id: Vec<Uuid>,
    /// At most this many rows.
    #[arg(long, default_value_t = 1000)]
    pub(crate) limit: usize,
}

/// A purge of finished rows.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    /// The route.
    #[arg(long)]
    pub(crate) route: String,
    /// Which finished rows.
    #[arg(long, value_enum)]
    pub(crate) status: FinishedStatus,
    /// Only rows finished at least this long ago (e.g. 7d).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    pub(crate) older_than: Duration,
    /// Rows deleted per statement.
    #[arg(long, default_value_t = 1000)]
    pub(crate) batch: usize,
    /// Only count the rows that would go.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// A finished status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FinishedStatus {
    /// Published rows kept for retention.
    Published,
    /// Failed rows.
    Failed,
}
