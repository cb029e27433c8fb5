#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout)]
#![allow(clippy::print_stderr)]

mod args;
mod confirm;
mod connect;
mod dead_letter_commands;
mod failed_commands;
mod help;
mod hints;
mod inbox_commands;
mod output;
mod page;
mod slot_commands;
mod store_commands;

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;

use crate::args::{Cli, Command, StoreKind};

#[tokio::main]
async fn main() -> ExitCode {
    // Usage errors exit with 2 and `--help` with 0, both from clap.
    let cli = args::parse();
    let filter = EnvFilter::try_from_env("TIDINGS_LOG").unwrap_or_else(|_| EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let store = cli.store.clone();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // Each cause once, without the database server's source lines.
            let chain = tidings_core::port::error_chain(error.as_ref());
            eprintln!("error: {}", hints::for_operators(&chain));
            if let Some(hint) = hints::hint(&error, &store) {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let json = cli.json;
    match cli.command {
        Command::DeadLetters(action) => dead_letter_commands::run(&cli.broker, action, json).await,
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut help::command(), "tidings", &mut script);
            output::line(String::from_utf8_lossy(&script).trim_end());
            Ok(())
        }
        Command::Migrate { print_sql: true } => print_sql(&cli.store),
        command => store_commands::run(&cli.store, &cli.broker, command, json).await,
    }
}

/// `tidings migrate --print-sql`: the migrations as one script.
fn print_sql(store: &args::StoreArgs) -> anyhow::Result<()> {
    if store.store == StoreKind::Mongo {
        anyhow::bail!(
            "--print-sql is for PostgreSQL; MongoDB's collections and indexes are made by `{}`",
            hints::migrate_command(store)
        );
    }
    output::line(connect::postgres_unconnected(store)?.migration_script());
    Ok(())
}
