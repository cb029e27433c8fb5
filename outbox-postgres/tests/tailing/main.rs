//! Log tailing against a PostgreSQL cluster with `wal_level=logical`
//! (`LOGICAL_DATABASE_URL`): each case has a schema, a slot and a
//! publication of its own.
//!
//! - `crashes`: an event that keeps killing its relay is failed as a
//!   crash loop.
//! - `delivery`: each event once, in commit order, per-key order across
//!   retries, in both modes, and what each mode leaves in the table.
//! - `deployment`: staging through PgBouncer while the relay reads the
//!   slot directly, and a server restart under a running relay.
//! - `failures`: poison fails alone into the table and is requeued,
//!   events of routes no relay serves, unreadable messages.
//! - `slot`: one reader per slot with standbys taking over, a relay
//!   killed mid-stream, a slot dropped and created again.

#[path = "../support/mod.rs"]
mod support;

/// A case of one mode's, run as a test in each mode.
macro_rules! in_both_modes {
    ($case:ident: messages $messages:ident, table $table:ident) => {
        #[tokio::test]
        async fn $messages() {
            $case(tidings_postgres::TailMode::Messages).await;
        }

        #[tokio::test]
        async fn $table() {
            $case(tidings_postgres::TailMode::Table).await;
        }
    };
}

mod crashes;
mod delivery;
mod deployment;
mod failures;
mod setup;
mod slot;
