//! The commands on dead-letter queues. Listing, showing and dry runs
//! change nothing the dead letters carry; a purge deletes exactly the
//! messages it listed, once someone said yes.

use tidings_admin::dead_letters::{
    DeadLetter, DeadLetterFilter, DeadLetterQueues, DeadLetterReport, RabbitDeadLetters,
    ReplayOptions,
};

use crate::args::{BrokerArgs, BrokerKind, DeadLetterAction, DeadLetterArgs};
use crate::{confirm, output};

/// Runs a dead-letter command on the broker it names.
pub(crate) async fn run(
    args: &BrokerArgs,
    action: DeadLetterAction,
    json: bool,
) -> anyhow::Result<()> {
    match args.broker {
        BrokerKind::Rabbitmq => {
            let broker = RabbitDeadLetters::connect_as(&args.amqp_url, &args.amqp_connection_name)
                .await
                .map_err(|e| anyhow::anyhow!("{e}; check --amqp-url (or AMQP_URL)"))?;
            on(&broker, action, json).await
        }
        BrokerKind::Sqs => sqs(args, action, json).await,
        BrokerKind::Kafka => kafka(args, action, json).await,
    }
}

/// Runs `action` on the dead-letter queues of `broker`, whichever broker
/// it reads.
async fn on(
    broker: &impl DeadLetterQueues,
    action: DeadLetterAction,
    json: bool,
) -> anyhow::Result<()> {
    match action {
        DeadLetterAction::List(args) => {
            let depth = broker.depth(&args.queue).await?;
            let letters = broker.list(&args.queue, &filter(&args)).await?;
            print_list(&depth.queue, depth.messages, &letters, json)
        }
        DeadLetterAction::Show { queue, id } => print_one(&broker.show(&queue, &id).await?, json),
        DeadLetterAction::Replay {
            filter: args,
            rate,
            dry_run,
        } => {
            let options = ReplayOptions::new()
                .rate(rate.unwrap_or(0.0))
                .dry_run(dry_run);
            let done = broker.replay(&args.queue, &filter(&args), options).await?;
            print_report(&done, "replayed", Some(&args.queue), json)
        }
        DeadLetterAction::Purge {
            filter: args,
            all: _,
            dry_run,
            yes,
        } => purge(broker, &args, dry_run, yes, json).await,
    }
}

/// Deletes the dead letters `args` selects: looks first, shows what would
/// go and asks (unless `yes`), then deletes exactly the messages it
/// showed, should more have come in meanwhile.
async fn purge(
    broker: &impl DeadLetterQueues,
    args: &DeadLetterArgs,
    dry_run: bool,
    yes: bool,
    json: bool,
) -> anyhow::Result<()> {
    let dry = ReplayOptions::new().dry_run(true);
    let mut preview = broker.purge(&args.queue, &filter(args), dry).await?;
    if dry_run || preview.ids.is_empty() {
        preview.dry_run = dry_run;
        return print_report(&preview, "deleted", None, json);
    }
    let what = format!(
        "delete {} dead letters from {}",
        preview.ids.len(),
        preview.queue
    );
    if !confirm::confirm_these(&what, &preview.ids, yes)? {
        anyhow::bail!("nothing deleted: not confirmed");
    }
    let selected = DeadLetterFilter {
        ids: Some(preview.ids.clone()),
        limit: preview.ids.len(),
        ..filter(args)
    };
    let done = broker
        .purge(&args.queue, &selected, ReplayOptions::new())
        .await?;
    print_report(&done, "deleted", None, json)
}

#[cfg(not(feature = "sqs"))]
async fn sqs(_: &BrokerArgs, _: DeadLetterAction, _: bool) -> anyhow::Result<()> {
    anyhow::bail!("this build has no SQS support; build tidings-cli with --features sqs")
}

#[cfg(feature = "sqs")]
async fn sqs(args: &BrokerArgs, action: DeadLetterAction, json: bool) -> anyhow::Result<()> {
    use tidings_admin::dead_letters::SqsDeadLetters;
    let broker = SqsDeadLetters::new(crate::connect::sqs_client(args.sqs_endpoint.as_deref()));
    on(&broker, action, json).await
}

#[cfg(not(feature = "kafka"))]
async fn kafka(_: &BrokerArgs, _: DeadLetterAction, _: bool) -> anyhow::Result<()> {
    anyhow::bail!("this build has no Kafka support; build tidings-cli with --features kafka")
}

#[cfg(feature = "kafka")]
async fn kafka(args: &BrokerArgs, action: DeadLetterAction, json: bool) -> anyhow::Result<()> {
    use tidings_admin::dead_letters::KafkaDeadLetters;
    use tidings_admin::tidings_kafka::ClientOptions;
    let client = ClientOptions::new(&args.kafka_brokers).client_id("tidings-cli");
    on(&KafkaDeadLetters::new(&client)?, action, json).await
}

fn filter(args: &DeadLetterArgs) -> DeadLetterFilter {
    DeadLetterFilter {
        event_type: args.event_type.clone(),
        older_than: args.older_than,
        reason: args.reason.clone(),
        ids: (!args.id.is_empty()).then(|| args.id.clone()),
        limit: args.limit,
    }
}

fn print_list(queue: &str, depth: u64, letters: &[DeadLetter], json: bool) -> anyhow::Result<()> {
    if json {
        return output::json(
            &serde_json::json!({ "queue": queue, "depth": depth, "messages": letters }),
        );
    }
    let mut table = output::table(&["MESSAGE ID", "TYPE", "AGE", "SIZE", "REASON"], 9);
    for letter in letters {
        table.add_row(vec![
            letter.id.clone(),
            letter.event_type.clone().unwrap_or_default(),
            output::age(letter.age_secs),
            letter.size.to_string(),
            letter.reason.clone().unwrap_or_default(),
        ]);
    }
    output::line(&table);
    output::line(format_args!(
        "{} of {depth} messages in {queue} shown; none consumed",
        letters.len()
    ));
    Ok(())
}

fn print_one(letter: &DeadLetter, json: bool) -> anyhow::Result<()> {
    if json {
        return output::json(letter);
    }
    output::field("message id", &letter.id);
    output::field("event type", letter.event_type.as_deref().unwrap_or("-"));
    output::field("age", output::age(letter.age_secs));
    output::field("reason", letter.reason.as_deref().unwrap_or("-"));
    let deliveries = letter.deliveries.map(|n| n.to_string());
    output::field("deliveries", deliveries.as_deref().unwrap_or("-"));
    output::field("first failure", ago(letter.first_failure_age_secs));
    output::field("parked", ago(letter.parked_age_secs));
    output::field("size", format!("{} bytes", letter.size));
    output::field("payload", &letter.payload);
    output::line("headers");
    for (name, value) in &letter.headers {
        output::line(format_args!("  {name}: {value}"));
    }
    Ok(())
}

/// What a replay (`into` its queue) or purge did, or would do.
fn print_report(
    report: &DeadLetterReport,
    verb: &str,
    into: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        return output::json(report);
    }
    if report.dry_run {
        output::line(format_args!(
            "would have {verb} {} messages of {} (dry run, nothing changed)",
            report.matched, report.queue
        ));
        for id in &report.ids {
            output::line(format_args!("  {id}"));
        }
    } else {
        let into = into
            .map(|queue| format!(" into {queue}"))
            .unwrap_or_default();
        output::line(format_args!(
            "{verb} {} of {} matching messages of {}{into}",
            report.done, report.matched, report.queue
        ));
    }
    Ok(())
}

/// An age as `3m 12s ago`, `-` for none.
fn ago(secs: Option<f64>) -> String {
    match secs {
        Some(_) => format!("{} ago", output::age(secs)),
        None => "-".to_owned(),
    }
}
