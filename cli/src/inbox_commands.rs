//! The commands on the inbox of handled events.

use anyhow::bail;
use serde_json::json;
use tidings_admin::{Admin, AdminStore, HandledEvent};

use crate::args::InboxCommand;
use crate::output;
use crate::output::report;

/// Runs `command` on the inbox beside `admin`'s outbox.
pub(crate) async fn run<S: AdminStore>(
    admin: &Admin<S>,
    command: InboxCommand,
    json: bool,
) -> anyhow::Result<()> {
    match command {
        InboxCommand::Show { consumer, event_id } => {
            let handled = admin.handled(&consumer, event_id).await?;
            if json {
                output::json(&handled)?;
            } else {
                print_handled(&handled);
            }
            if !handled.handled {
                bail!("{consumer} has not handled event {event_id}");
            }
            Ok(())
        }
        InboxCommand::Purge {
            consumer,
            older_than,
            batch,
        } => {
            let purged = admin.purge_inbox(&consumer, older_than, batch).await?;
            let text = format!("deleted {purged} inbox rows of {consumer}");
            report(
                json,
                &json!({ "consumer": consumer, "deleted": purged }),
                &text,
            )
        }
    }
}

fn print_handled(handled: &HandledEvent) {
    output::field("consumer", &handled.consumer);
    output::field("event id", handled.event_id);
    let when = match handled.handled_secs {
        Some(secs) => format!("yes, {} ago", output::age(Some(secs))),
        None => "no".to_owned(),
    };
    output::field("handled", when);
    let count = |n: Option<u32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    output::field(
        "attempts",
        format!(
            "{} started, {} failed, not committed",
            count(handled.attempts_started),
            count(handled.attempts_finished)
        ),
    );
}
