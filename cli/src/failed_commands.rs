//! `tidings failed delete`: failed rows removed for good, by id, after
//! showing what would go and asking.

use clap::Args;
use serde_json::json;
use tidings_admin::{Admin, AdminStore};
use tidings_core::FailedRow;
use uuid::Uuid;

use crate::confirm::confirm;
use crate::output;

/// Which failed rows to delete.
#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    /// The route.
    #[arg(long)]
    pub(crate) route: String,
    /// The event id of a failed row to delete (repeatable, at least one).
    #[arg(long, required = true)]
    pub(crate) id: Vec<Uuid>,
    /// Only show which rows would go.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Delete without asking (needed without a terminal).
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
}

/// Shows the named failed rows, asks, then deletes exactly those.
pub(crate) async fn delete<S: AdminStore>(
    admin: &Admin<S>,
    args: DeleteArgs,
    json: bool,
) -> anyhow::Result<()> {
    let entries = admin.selected(&args.route, &args.id).await?;
    if args.dry_run {
        return report(json, &args.route, &entries, 0, true);
    }
    if !json {
        print_rows(&entries);
    }
    let what = format!(
        "delete {} failed rows of {} for good",
        entries.len(),
        args.route
    );
    if !confirm(&what, args.yes)? {
        anyhow::bail!("nothing deleted: the deletion was not confirmed");
    }
    let deleted = admin.delete_failed(&args.route, &args.id, false).await?;
    report(json, &args.route, &entries, deleted, false)
}

fn print_rows(entries: &[FailedRow]) {
    let mut table = output::table(&["EVENT ID", "TYPE", "FAILED", "REASON"], 4);
    for e in entries {
        table.add_row(vec![
            e.event_id.to_string(),
            e.event_type.clone(),
            format!("{} ago", output::age(Some(e.failed_for.as_secs_f64()))),
            e.last_error.clone().unwrap_or_default(),
        ]);
    }
    output::line(table);
}

fn report(
    json: bool,
    route: &str,
    entries: &[FailedRow],
    deleted: u64,
    dry_run: bool,
) -> anyhow::Result<()> {
    if json {
        let ids: Vec<Uuid> = entries.iter().map(|e| e.event_id).collect();
        return output::json(&json!({
            "route": route,
            "ids": ids,
            "matched": entries.len(),
            "deleted": deleted,
            "dry_run": dry_run,
        }));
    }
    if dry_run {
        print_rows(entries);
        output::line(format_args!(
            "would delete {} failed rows of {route}; run again without --dry-run to delete them",
            entries.len()
        ));
    } else {
        output::line(format_args!("deleted {deleted} failed rows of {route}"));
    }
    Ok(())
}
