//! The help layout and the environment: each subcommand's `-h` shows its
//! own options and one line naming where the connection options are;
//! `--help` lists them under "Connection", each with its `TIDINGS_*`
//! variable.

use clap::{Arg, Command, CommandFactory, FromArgMatches};

use crate::args::{AFTER_HELP, Cli};

/// The one line a short help gives the connection options.
const CONNECTION_NOTE: &str = "Connection options (--database-url, --schema, --amqp-url, ...; or TIDINGS_* variables): --help";

/// What a long help adds below the options.
const ENVIRONMENT_NOTE: &str = "Every connection option also reads the TIDINGS_* variable shown \
beside it; an option given on the command line wins.";

/// Connection options and the names their variables had before the
/// `TIDINGS_` ones, still read when the `TIDINGS_` one is unset.
const OLDER_NAMES: [(&str, &str); 6] = [
    ("database_url", "DATABASE_URL"),
    ("mongodb_url", "MONGODB_URL"),
    ("mongodb_database", "MONGODB_DATABASE"),
    ("amqp_url", "AMQP_URL"),
    ("amqp_connection_name", "AMQP_CONNECTION_NAME"),
    ("sqs_endpoint", "SQS_ENDPOINT"),
];

/// The command line as parsed from the process's arguments; a usage error
/// or a help request exits here, as clap does.
pub(crate) fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

/// The whole command, laid out for help and completions.
pub(crate) fn command() -> Command {
    let mut command = Cli::command()
        .mut_args(connection)
        .after_help(format!("{AFTER_HELP}\n{CONNECTION_NOTE}"))
        .after_long_help(format!("{AFTER_HELP}\n{ENVIRONMENT_NOTE}"))
        .mut_subcommands(note);
    for (id, variable) in OLDER_NAMES {
        if let Some(value) = std::env::var(variable).ok().filter(|v| !v.is_empty()) {
            // Hidden: a URL may hold a password.
            command = command.mut_arg(id, |arg| arg.default_value(value).hide_default_value(true));
        }
    }
    command
}

/// A global option other than `--json` is a connection option: under
/// "Connection" in `--help`, left out of `-h`. `--json` stays among each
/// command's own options.
fn connection(arg: Arg) -> Arg {
    if arg.get_id() == "json" {
        arg.help_heading(None)
    } else if arg.is_global_set() {
        arg.help_heading("Connection").hide_short_help(true)
    } else {
        arg
    }
}

/// A subcommand's help, and its subcommands', names where the connection
/// options are.
fn note(command: Command) -> Command {
    command
        .after_help(CONNECTION_NOTE)
        .after_long_help(ENVIRONMENT_NOTE)
        .mut_subcommands(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn every_older_name_is_an_option() {
        let command = command();
        for (id, _) in OLDER_NAMES {
            assert!(command.get_arguments().any(|a| a.get_id() == id), "{id}");
        }
    }

    #[test]
    fn every_connection_option_reads_a_tidings_variable() {
        for arg in command().get_arguments().filter(|a| a.is_global_set()) {
            if arg.get_id() == "json" {
                continue;
            }
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            assert!(
                env.as_deref().is_some_and(|e| e.starts_with("TIDINGS_")),
                "{}: {env:?}",
                arg.get_id()
            );
        }
    }
}
