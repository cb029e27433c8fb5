//! The tidings benchmark: throughput, latency and memory of the outbox,
//! relay and consumer against the raw limits of PostgreSQL and RabbitMQ,
//! measured in the same run.
//!
//! ```sh
//! bash scripts/setup-services.sh   # starts PostgreSQL and RabbitMQ if down
//! cargo run --release -p tidings-bench -- all            # the full run
//! cargo run --release -p tidings-bench -- all --quick    # about a minute
//! cargo run --release -p tidings-bench -- drain-noop --drain-events 10000
//! ```
//!
//! Prints one line per figure as it is measured and a markdown table at the
//! end; exits non-zero when a scenario fails to run (a goal missed is
//! reported, not an error). See `docs/benchmarks.md` for the scenarios,
//! goals and results.
#![allow(clippy::print_stdout)]

mod args;
mod clients;
mod consuming;
mod costs;
mod counting;
mod cpu;
mod delays;
mod env;
mod load;
mod payload;
mod publishers;
mod raw_consume;
mod raw_drain;
mod raw_publish;
mod raw_sweep;
mod raw_wal;
mod report;
mod rounds;
mod scenarios;
mod sizes;
mod stored_consuming;
mod tailing;
mod telemetry;
mod warm_relay;

use args::Command;
use env::Env;
use report::Figure;

/// Pool connections: the clients of the stage and consume scenarios plus
/// the relay, the listener and the consumer's own.
const EXTRA_CONNECTIONS: u32 = 6;

fn main() -> anyhow::Result<()> {
    telemetry::init();
    let command = args::parse(std::env::args().skip(1).collect())?;
    if let Command::Help = command {
        println!("{}", args::USAGE);
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match command {
            Command::Child(args) => {
                println!("{}", scenarios::run_child(args).await?);
                Ok(())
            }
            Command::Help => Ok(()),
            Command::Run { scenarios, sizes } => {
                let connections = sizes.clients as u32 + EXTRA_CONNECTIONS;
                let env = Env::connect(connections, sizes.layout).await?;
                let mut figures: Vec<Figure> = Vec::new();
                for scenario in scenarios {
                    let mut report = |figure: Figure| {
                        println!("{}", figure.line());
                        figures.push(figure);
                    };
                    scenario.run(&env, &sizes, &mut report).await?;
                }
                println!();
                print!("{}", report::table(&figures));
                Ok(())
            }
        }
    })
}
