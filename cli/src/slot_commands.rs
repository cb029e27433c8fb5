//! `tidings slot`: the replication slot of an outbox relayed by log
//! tailing, seen, and accepted again after it was lost.

use anyhow::bail;
use clap::Subcommand;
use serde_json::json;
use tidings_admin::tidings_postgres::PgOutboxStore;

use crate::confirm::confirm;
use crate::output::report;

/// The replication slot of a PostgreSQL outbox relayed by log tailing.
#[derive(Debug, Subcommand)]
pub(crate) enum SlotCommand {
    /// Where the slot stands: its confirmed position, the log written since
    /// (lag) and the log it keeps the server from removing (retained).
    Status,
    /// Accept the slot where it stands, after it was lost or created again
    /// and the relay stopped: in table mode the events still pending are
    /// staged again for it; in message mode, what was committed while no
    /// slot kept the log is gone. Run it once those events are recovered.
    Accept {
        /// Accept without asking (needed without a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// Runs `command` on `store`'s slot.
pub(crate) async fn run(
    store: &PgOutboxStore,
    command: SlotCommand,
    json: bool,
) -> anyhow::Result<()> {
    match command {
        SlotCommand::Status => {
            let Some(state) = store.slot_state().await? else {
                bail!("the outbox's replication slot does not exist: `tidings migrate` creates it");
            };
            let text = format!(
                "confirmed {} · lag {} bytes · retained {} bytes · {}",
                lsn(state.confirmed),
                state.lag_bytes(),
                state.retained_bytes(),
                match state.active {
                    true => "a relay reads it",
                    false => "no relay reads it",
                }
            );
            let value = json!({
                "confirmed": lsn(state.confirmed),
                "lag_bytes": state.lag_bytes(),
                "retained_bytes": state.retained_bytes(),
                "active": state.active,
            });
            report(json, &value, &text)
        }
        SlotCommand::Accept { yes } => {
            let what =
                "accept the replication slot where it stands, skipping nothing it still keeps";
            if !confirm(what, yes)? {
                bail!("nothing accepted: it was not confirmed");
            }
            let at = store.accept_slot_position().await?;
            report(
                json,
                &json!({ "accepted": lsn(at) }),
                &format!("accepted at {}", lsn(at)),
            )
        }
    }
}

/// A log position as PostgreSQL writes it.
fn lsn(at: u64) -> String {
    format!("{:X}/{:X}", at >> 32, at & 0xFFFF_FFFF)
}
