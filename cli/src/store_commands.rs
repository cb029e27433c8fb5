//! The commands on an outbox store and its inbox.

use anyhow::bail;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use tidings_admin::{Admin, AdminStore, RouteStatus, Status};
use tidings_core::{FailedFilter, PurgeRequest, PurgeStatus};

use crate::args::{
    BrokerArgs, Command, FailedArgs, FailedCommand, FinishedStatus, PurgeArgs, ServeArgs,
    StoreArgs, StoreKind,
};
use crate::output::report;
use crate::{connect, failed_commands, inbox_commands, output, page, slot_commands};

/// Runs `command` on the store `args` name.
pub(crate) async fn run(
    args: &StoreArgs,
    broker: &BrokerArgs,
    command: Command,
    json: bool,
) -> anyhow::Result<()> {
    match (args.store, command) {
        (StoreKind::Postgres, Command::Serve(serve)) => {
            serve_on(connect::postgres, args, broker, serve).await
        }
        (StoreKind::Mongo, Command::Serve(serve)) => {
            serve_on(connect::mongo, args, broker, serve).await
        }
        (StoreKind::Postgres, Command::Slot(command)) => {
            let admin = connect::postgres(args).await?;
            slot_commands::run(admin.store(), command, json).await
        }
        (StoreKind::Mongo, Command::Slot(_)) => {
            bail!("replication slots are PostgreSQL's: log tailing needs a PostgreSQL outbox")
        }
        (StoreKind::Postgres, command) => {
            run_on(connect::postgres(args).await?, command, json).await
        }
        (StoreKind::Mongo, command) => run_on(connect::mongo(args).await?, command, json).await,
    }
}

/// `serve` on the store `connect` opens for `args`, with each
/// `--stored-inbox` opened the same way beside it.
async fn serve_on<S: AdminStore>(
    connect: impl AsyncFn(&StoreArgs) -> anyhow::Result<Admin<S>>,
    args: &StoreArgs,
    broker: &BrokerArgs,
    serve: ServeArgs,
) -> anyhow::Result<()> {
    let mut stored = Vec::new();
    for (name, args) in stored_inboxes(args, &serve) {
        stored.push((name, connect(&args).await?));
    }
    let admin = connect(args).await?;
    page::serve(admin, stored, args, broker, serve).await
}

/// Each `--stored-inbox` of `serve`: its name, and the store options of
/// its table (MongoDB: collection) beside the outbox.
fn stored_inboxes(args: &StoreArgs, serve: &ServeArgs) -> Vec<(String, StoreArgs)> {
    let table = |table: &String| StoreArgs {
        table: Some(table.clone()),
        collection: Some(table.clone()),
        ..args.clone()
    };
    let inboxes = serve.stored_inbox.iter();
    inboxes.map(|(name, t)| (name.clone(), table(t))).collect()
}

async fn run_on<S: AdminStore>(
    admin: Admin<S>,
    command: Command,
    json: bool,
) -> anyhow::Result<()> {
    match command {
        Command::Migrate { print_sql: _ } => {
            let done = admin.migrate().await?;
            report(json, &json!({ "migrate": done }), &done)
        }
        Command::Verify => {
            admin.verify().await?;
            report(json, &json!({ "verify": "ok" }), "schema is up to date")
        }
        Command::Status { route } => status(&admin, &route, json).await,
        Command::Failed(command) => failed(&admin, command, json).await,
        Command::Purge(args) => purge(&admin, args, json).await,
        Command::Inbox(command) => inbox_commands::run(&admin, command, json).await,
        Command::DeadLetters(_)
        | Command::Serve(_)
        | Command::Slot(_)
        | Command::Completions { .. } => {
            bail!("not a store command")
        }
    }
}

async fn status<S: AdminStore>(
    admin: &Admin<S>,
    routes: &[String],
    json: bool,
) -> anyhow::Result<()> {
    let mut status = admin.status().await?;
    if !routes.is_empty() {
        let mut chosen = Vec::new();
        for route in routes {
            chosen.push(admin.route_status(route).await?);
        }
        status.routes = chosen;
    }
    if json {
        return output::json(&status);
    }
    print_status(&status);
    Ok(())
}

fn print_status(status: &Status) {
    let mut routes = output::table(
        &[
            "ROUTE",
            "PENDING",
            "IN FLIGHT",
            "FAILED",
            "RETAINED",
            "OLDEST PENDING",
        ],
        1,
    );
    for r in &status.routes {
        routes.add_row(route_row(r));
    }
    output::line(&routes);
    if status.routes.is_empty() {
        output::line("(no routes: nothing was ever staged in this outbox)");
    }
    output::line("");
    let mut consumers = output::table(&["CONSUMER", "MARKS", "OLDEST MARK"], 1);
    for c in &status.consumers {
        consumers.add_row(vec![
            c.consumer.clone(),
            c.marks.to_string(),
            output::age(c.oldest_mark_secs),
        ]);
    }
    output::line(&consumers);
}

fn route_row(r: &RouteStatus) -> Vec<String> {
    vec![
        r.route.clone(),
        r.pending.to_string(),
        r.in_flight.to_string(),
        r.failed.to_string(),
        r.retained.to_string(),
        output::age(r.oldest_pending_secs),
    ]
}

async fn failed<S: AdminStore>(
    admin: &Admin<S>,
    command: FailedCommand,
    json: bool,
) -> anyhow::Result<()> {
    match command {
        FailedCommand::List(args) => {
            let entries = admin.failed(&args.route, &filter(&args)).await?;
            if json {
                return output::json(&entries);
            }
            let mut table = output::table(&["EVENT ID", "TYPE", "FAILED", "ATTEMPTS", "REASON"], 9);
            for e in &entries {
                table.add_row(vec![
                    e.event_id.to_string(),
                    e.event_type.clone(),
                    format!("{} ago", output::age(Some(e.failed_for.as_secs_f64()))),
                    e.attempts.to_string(),
                    e.last_error.clone().unwrap_or_default(),
                ]);
            }
            output::line(&table);
            output::line(format_args!(
                "{} failed rows on {}",
                entries.len(),
                args.route
            ));
            Ok(())
        }
        FailedCommand::Show { route, id } => {
            let entry = admin.show(&route, id).await?;
            if json {
                return output::json(&entry);
            }
            output::field("event id", entry.event_id);
            output::field("event type", &entry.event_type);
            output::field("destination", &entry.destination);
            output::field("ordering key", entry.ordering_key.as_deref().unwrap_or("-"));
            output::field("attempts", entry.attempts);
            output::field(
                "failed",
                format!("{} ago", output::age(Some(entry.failed_for.as_secs_f64()))),
            );
            output::field("reason", entry.last_error.as_deref().unwrap_or("-"));
            output::field("content type", &entry.content_type);
            output::field("payload", String::from_utf8_lossy(&entry.payload));
            Ok(())
        }
        FailedCommand::Requeue {
            filter: args,
            all: _,
            dry_run,
        } => {
            let moved = admin.requeue(&args.route, &filter(&args), dry_run).await?;
            let verb = if dry_run { "would requeue" } else { "requeued" };
            let text = format!("{verb} {moved} failed rows of {}", args.route);
            report(
                json,
                &json!({ "route": args.route, "requeued": moved, "dry_run": dry_run }),
                &text,
            )
        }
        FailedCommand::Delete(args) => failed_commands::delete(admin, args, json).await,
    }
}

fn filter(args: &FailedArgs) -> FailedFilter {
    FailedFilter {
        event_type: args.event_type.clone(),
        older_than: args.older_than,
        ids: (!args.id.is_empty()).then(|| args.id.clone()),
        limit: args.limit,
    }
}

async fn purge<S: AdminStore>(admin: &Admin<S>, args: PurgeArgs, json: bool) -> anyhow::Result<()> {
    let request = PurgeRequest {
        status: match args.status {
            FinishedStatus::Published => PurgeStatus::Published,
            FinishedStatus::Failed => PurgeStatus::Failed,
        },
        older_than: args.older_than,
        limit: args.batch,
    };
    let bar = if json || args.dry_run {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0).with_style(
            ProgressStyle::with_template(
                "{bar:40} {pos}/{len} rows deleted ({per_sec}, {eta} left)",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        )
    };
    let report_ = admin
        .purge(&args.route, request, args.dry_run, |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
        .await;
    bar.finish_and_clear();
    let done = report_?;
    let text = if done.dry_run {
        format!(
            "would delete {} rows of {} (dry run, nothing deleted)",
            done.matched, args.route
        )
    } else {
        format!("deleted {} rows of {}", done.deleted, args.route)
    };
    report(json, &done, &text)
}
