//! Command-line arguments: which scenarios to run and how big.

use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use tidings_postgres::Layout;

use crate::scenarios::Scenario;
use crate::sizes::{LatencyWake, Sizes};

/// What to run.
#[derive(Debug)]
pub(crate) enum Command {
    /// Runs scenarios and prints their figures.
    Run {
        scenarios: Vec<Scenario>,
        /// Boxed: every other command is a few words.
        sizes: Box<Sizes>,
    },
    /// Runs one side of the memory scenario as a child process.
    Child(Vec<String>),
    /// Prints the usage.
    Help,
}

pub(crate) const USAGE: &str = "\
usage: tidings-bench <scenario>|all [options]

scenarios: stage, stage-wal, drain-noop, drain-rabbitmq, drain-rabbitmq-pooled,
           drain-kafka (with --features kafka), drain-wal, latency, consume,
           consume-stored, stored-outage, memory, growth, chaos, otel-overhead (with --features otel), scale-out,
           routes, tenants, pinned and pinned-wal (only when named), mongo-stage,
           mongo-drain-noop and mongo-latency (with --features mongo)

options:
  --quick                 a tenth of every size (about a minute in all)
  --scale <f>             multiply every size by <f>
  --stage-transactions <n>   (default 20000)
  --clients <n>              (default 8)
  --drain-events <n>         (default 50000)
  --wal-events <n>           drain-wal's backlog (default 200000)
  --batch-size <n>           (default 100)
  --wide-claim <n>           (default 500)
  --latency-seconds <n>      (default 20)
  --latency-rates <a,b,..>   (default 200,2000)
  --wake store|wal           latency's relays woken by the store (default) or, on
                             the logical cluster, read from the slot beside NOTIFY
  --consume-messages <n>     (default 20000)
  --consume-batch <n>        (default 16)
  --outage-seconds <n>       stored-outage's handler outage (default 30)
  --outage-rate <n>          stored-outage's publishing rate (default 500)
  --memory-events <n>        (default 50000)
  --growth-retained <n>      (default 1000000)
  --chaos-events <n>         (default 20000)
  --chaos-kill-every-ms <n>  (default 1000)
  --scale-events <n>         (default 50000)
  --pinned-seconds <n>       (default 180)
  --pinned-rate <n>          (default 500)
  --mongo-events <n>         (default 2000)
  --mongo-rates <a,b,..>     (default 20,100)
  --layout plain|rotated     PostgreSQL outboxes deleting published rows (default plain)

PostgreSQL, RabbitMQ and Kafka are read from DATABASE_URL, AMQP_URL and
KAFKA_BROKERS; drain-rabbitmq-pooled also reaches PostgreSQL through the
PgBouncer at PGBOUNCER_URL; the mongo scenarios reach MongoDB at
MONGODB_URL; stage-wal, drain-wal, pinned-wal and latency --wake wal run on
the cluster with wal_level=logical at LOGICAL_DATABASE_URL.";

/// Parses the arguments after the program name.
pub(crate) fn parse(args: Vec<String>) -> anyhow::Result<Command> {
    let mut args = args.into_iter();
    let first = args.next().context(USAGE)?;
    match first.as_str() {
        "child" => return Ok(Command::Child(args.collect())),
        "-h" | "--help" | "help" => return Ok(Command::Help),
        _ => {}
    }
    let scenarios = Scenario::parse(&first).map_err(|e| anyhow!("{e}\n\n{USAGE}"))?;
    let mut flags = Vec::new();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--quick" => flags.push((flag, String::new())),
            "-h" | "--help" => return Ok(Command::Help),
            _ => {
                let value = args
                    .next()
                    .with_context(|| format!("{flag} needs a value"))?;
                flags.push((flag, value));
            }
        }
    }
    // The scale applies first, so explicit sizes win over it.
    let mut factor = 1.0;
    for (flag, value) in &flags {
        match flag.as_str() {
            "--quick" => factor = 0.1,
            "--scale" => factor = value.parse()?,
            _ => {}
        }
    }
    let mut sizes = Sizes::default().scaled(factor);
    for (flag, value) in &flags {
        apply(&mut sizes, flag, value).with_context(|| format!("{flag} {value}"))?;
    }
    Ok(Command::Run {
        scenarios,
        sizes: Box::new(sizes),
    })
}

fn apply(sizes: &mut Sizes, flag: &str, value: &str) -> anyhow::Result<()> {
    match flag {
        "--quick" | "--scale" => {}
        "--stage-transactions" => sizes.stage_transactions = value.parse()?,
        "--clients" => sizes.clients = value.parse::<usize>()?.max(1),
        "--drain-events" => sizes.drain_events = value.parse()?,
        "--wal-events" => sizes.wal_events = value.parse::<usize>()?.max(1),
        "--batch-size" => sizes.batch_size = value.parse::<usize>()?.max(1),
        "--wide-claim" => sizes.wide_claim = value.parse::<usize>()?.max(1),
        "--latency-seconds" => sizes.latency_duration = Duration::from_secs_f64(value.parse()?),
        "--latency-rates" => sizes.latency_rates = rates(value)?,
        "--wake" => {
            let wakes = [("store", LatencyWake::Store), ("wal", LatencyWake::Wal)];
            sizes.latency_wake = one_of("wake-up", value, wakes)?;
        }
        "--consume-messages" => sizes.consume_messages = value.parse()?,
        "--consume-batch" => sizes.consume_batch = value.parse::<usize>()?.max(1),
        "--outage-seconds" => sizes.outage_duration = Duration::from_secs_f64(value.parse()?),
        "--outage-rate" => sizes.outage_rate = value.parse::<u32>()?.max(1),
        "--memory-events" => sizes.memory_events = value.parse()?,
        "--growth-retained" => sizes.growth_retained = value.parse()?,
        "--chaos-events" => sizes.chaos_events = value.parse::<usize>()?.max(1),
        "--chaos-kill-every-ms" => {
            sizes.chaos_kill_every = Duration::from_millis(value.parse::<u64>()?.max(10));
        }
        "--scale-events" => sizes.scale_events = value.parse::<usize>()?.max(1),
        "--pinned-seconds" => sizes.pinned_duration = Duration::from_secs_f64(value.parse()?),
        "--pinned-rate" => sizes.pinned_rate = value.parse::<u32>()?.max(1),
        "--mongo-events" => sizes.mongo_events = value.parse::<usize>()?.max(1),
        "--mongo-rates" => sizes.mongo_rates = rates(value)?,
        "--layout" => {
            let layouts = [("plain", Layout::Plain), ("rotated", Layout::Rotated)];
            sizes.layout = one_of("layout", value, layouts)?;
        }
        other => bail!("unknown option {other}\n\n{USAGE}"),
    }
    Ok(())
}

/// Rates given as a comma-separated list, events per second.
fn rates(value: &str) -> anyhow::Result<Vec<u32>> {
    Ok(value.split(',').map(str::parse).collect::<Result<_, _>>()?)
}

/// The choice named `value` of two `choices`, or an error naming both.
fn one_of<T: Copy>(what: &str, value: &str, choices: [(&str, T); 2]) -> anyhow::Result<T> {
    match choices.iter().find(|(name, _)| *name == value) {
        Some(&(_, choice)) => Ok(choice),
        None => {
            let [(first, _), (second, _)] = choices;
            bail!("unknown {what} {value}: {first} or {second}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_words(words: &str) -> anyhow::Result<Command> {
        parse(words.split_whitespace().map(str::to_owned).collect())
    }

    #[test]
    fn help_is_asked_for_before_or_after_a_scenario() {
        for words in ["--help", "-h", "help", "all --help", "stage --quick -h"] {
            assert!(matches!(parse_words(words), Ok(Command::Help)), "{words}");
        }
    }

    #[test]
    fn explicit_sizes_win_over_the_scale() {
        let Ok(Command::Run { sizes, .. }) = parse_words("stage --drain-events 7 --quick") else {
            panic!("not a run");
        };
        assert_eq!(sizes.drain_events, 7);
        assert_eq!(sizes.stage_transactions, 2_000);
    }

    #[test]
    fn unknown_scenarios_and_options_are_refused_with_the_usage() {
        let unknown = format!("{:#}", parse_words("stagger").unwrap_err());
        assert!(unknown.contains("usage:"), "{unknown}");
        let option = format!("{:#}", parse_words("stage --fast 1").unwrap_err());
        assert!(option.contains("unknown option --fast"), "{option}");
    }
}
