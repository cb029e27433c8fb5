#![doc = include_str!("../README.md")]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod confirm;
mod connect;
mod dead_letter_commands;
mod failed_commands;
mod output;
mod page;
mod store_commands;

use std::process::ExitCode;

use clap::Parser;
use tidings_admin::AdminError;
use tidings_core::StoreError;
use tracing_subscriber::EnvFilter;

use crate::args::{Cli, Command};

#[tokio::main]
async fn main() -> ExitCode {
    // Usage errors exit with 2 and `--help` with 0, both from clap.
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_env("TIDINGS_LOG").unwrap_or_else(|_| EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            if let Some(hint) = hint(&error) {
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
        command => store_commands::run(&cli.store, &cli.broker, command, json).await,
    }
}

/// What to do about an error the store's own message cannot know.
fn hint(error: &anyhow::Error) -> Option<&'static str> {
    match error.downcast_ref::<AdminError>()? {
        AdminError::Store(StoreError::Schema(_)) => Some(
            "`tidings migrate` creates or updates the schema; check --schema, --table or --mongodb-database",
        ),
        _ => None,
    }
}
