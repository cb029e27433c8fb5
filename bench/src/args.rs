//! Command-line arguments: which scenarios to run and how big.

use std::time::Duration;

use anyhow::{Context, bail};
use tidings_postgres::Layout;

use crate::scenarios::Scenario;

/// The sizes of every scenario; the defaults are the full run.
#[derive(Debug, Clone)]
pub(crate) struct Sizes {
    /// Transactions of the stage scenario.
    pub(crate) stage_transactions: usize,
    /// Concurrent clients of the stage and consume scenarios.
    pub(crate) clients: usize,
    /// Pending events of the drain scenarios.
    pub(crate) drain_events: usize,
    /// Rows claimed per pass, by the relay and by the raw loops; also the
    /// confirm window of every side of drain-rabbitmq.
    pub(crate) batch_size: usize,
    /// Rows the wide relay of drain-rabbitmq claims at once, published in
    /// windows of `batch_size`.
    pub(crate) wide_claim: usize,
    /// How long each latency rate runs.
    pub(crate) latency_duration: Duration,
    /// The steady rates of the latency scenario, events per second.
    pub(crate) latency_rates: Vec<u32>,
    /// Messages of the consume scenario.
    pub(crate) consume_messages: usize,
    /// The consumer's `max_batch` in the consume scenario's batched run.
    pub(crate) consume_batch: usize,
    /// Events the relay and consumer processes of the memory scenario move.
    pub(crate) memory_events: usize,
    /// Published rows kept in the table of the growth scenario.
    pub(crate) growth_retained: usize,
    /// Events of each round of the chaos scenario.
    pub(crate) chaos_events: usize,
    /// The mean run of a relay or consumer process between kills in the
    /// chaos scenario (each run lasts half to twice this).
    pub(crate) chaos_kill_every: Duration,
    /// Events of each round of the scale-out scenario.
    pub(crate) scale_events: usize,
    /// How long each run of the pinned scenario stages at its rate.
    pub(crate) pinned_duration: Duration,
    /// The steady rate of the pinned scenario, events per second.
    pub(crate) pinned_rate: u32,
    /// Transactions of mongo-stage and pending events of mongo-drain-noop.
    pub(crate) mongo_events: usize,
    /// The steady rates of mongo-latency, events per second.
    pub(crate) mongo_rates: Vec<u32>,
    /// The layout of the PostgreSQL outboxes that delete published rows
    /// (pinned runs both).
    pub(crate) layout: Layout,
}

impl Default for Sizes {
    fn default() -> Self {
        Self {
            stage_transactions: 20_000,
            clients: 8,
            drain_events: 50_000,
            batch_size: 100,
            wide_claim: 500,
            latency_duration: Duration::from_secs(20),
            latency_rates: vec![200, 2_000],
            consume_messages: 20_000,
            consume_batch: 16,
            memory_events: 50_000,
            growth_retained: 1_000_000,
            chaos_events: 20_000,
            chaos_kill_every: Duration::from_secs(1),
            scale_events: 50_000,
            pinned_duration: Duration::from_secs(180),
            pinned_rate: 500,
            mongo_events: 2_000,
            mongo_rates: vec![20, 100],
            layout: Layout::Plain,
        }
    }
}

impl Sizes {
    /// Every count multiplied by `factor` (at least one batch each).
    pub(crate) fn scaled(mut self, factor: f64) -> Self {
        let scale = |n: usize| ((n as f64 * factor).round() as usize).max(10);
        self.stage_transactions = scale(self.stage_transactions);
        self.drain_events = scale(self.drain_events);
        self.consume_messages = scale(self.consume_messages);
        self.memory_events = scale(self.memory_events);
        self.growth_retained = scale(self.growth_retained);
        self.chaos_events = scale(self.chaos_events);
        self.scale_events = scale(self.scale_events);
        self.mongo_events = scale(self.mongo_events);
        let secs = (self.latency_duration.as_secs_f64() * factor).max(0.5);
        self.latency_duration = Duration::from_secs_f64(secs);
        let secs = (self.pinned_duration.as_secs_f64() * factor).max(1.0);
        self.pinned_duration = Duration::from_secs_f64(secs);
        self
    }
}

/// What to run.
#[derive(Debug)]
pub(crate) enum Command {
    /// Runs scenarios and prints their figures.
    Run {
        scenarios: Vec<Scenario>,
        sizes: Sizes,
    },
    /// Runs one side of the memory scenario as a child process.
    Child(Vec<String>),
    /// Prints the usage.
    Help,
}

pub(crate) const USAGE: &str = "\
usage: tidings-bench <scenario>|all [options]

scenarios: stage, drain-noop, drain-rabbitmq, drain-rabbitmq-pooled,
           drain-kafka (with --features kafka), latency, consume, memory, growth,
           chaos, otel-overhead (with --features otel), scale-out,
           routes, tenants, pinned (only when named), mongo-stage, mongo-drain-noop and
           mongo-latency (with --features mongo)

options:
  --quick                 a tenth of every size (about a minute in all)
  --scale <f>             multiply every size by <f>
  --stage-transactions <n>   (default 20000)
  --clients <n>              (default 8)
  --drain-events <n>         (default 50000)
  --batch-size <n>           (default 100)
  --wide-claim <n>           (default 500)
  --latency-seconds <n>      (default 20)
  --latency-rates <a,b,..>   (default 200,2000)
  --consume-messages <n>     (default 20000)
  --consume-batch <n>        (default 16)
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
MONGODB_URL.";

/// Parses the arguments after the program name.
pub(crate) fn parse(args: Vec<String>) -> anyhow::Result<Command> {
    let mut args = args.into_iter();
    let first = args.next().context(USAGE)?;
    match first.as_str() {
        "child" => return Ok(Command::Child(args.collect())),
        "-h" | "--help" | "help" => return Ok(Command::Help),
        _ => {}
    }
    let scenarios = Scenario::parse(&first)?;
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
    Ok(Command::Run { scenarios, sizes })
}

fn apply(sizes: &mut Sizes, flag: &str, value: &str) -> anyhow::Result<()> {
    match flag {
        "--quick" | "--scale" => {}
        "--stage-transactions" => sizes.stage_transactions = value.parse()?,
        "--clients" => sizes.clients = value.parse::<usize>()?.max(1),
        "--drain-events" => sizes.drain_events = value.parse()?,
        "--batch-size" => sizes.batch_size = value.parse::<usize>()?.max(1),
        "--wide-claim" => sizes.wide_claim = value.parse::<usize>()?.max(1),
        "--latency-seconds" => sizes.latency_duration = Duration::from_secs_f64(value.parse()?),
        "--latency-rates" => {
            sizes.latency_rates = value.split(',').map(str::parse).collect::<Result<_, _>>()?;
        }
        "--consume-messages" => sizes.consume_messages = value.parse()?,
        "--consume-batch" => sizes.consume_batch = value.parse::<usize>()?.max(1),
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
        "--mongo-rates" => {
            sizes.mongo_rates = value.split(',').map(str::parse).collect::<Result<_, _>>()?;
        }
        "--layout" => {
            sizes.layout = match value {
                "plain" => Layout::Plain,
                "rotated" => Layout::Rotated,
                other => bail!("unknown layout {other}: plain or rotated"),
            }
        }
        other => bail!("unknown option {other}\n\n{USAGE}"),
    }
    Ok(())
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
