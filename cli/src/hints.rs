//! Errors worded for operators: the stores' advice to library users
//! (`run PgOutboxStore::migrate()`) replaced by the exact `tidings`
//! command that fixes the problem, with the options that were given.

use tidings_admin::AdminError;
use tidings_core::{InboxError, StoreError};

use crate::args::{StoreArgs, StoreKind};

/// Advice the stores give library users, cut from the messages the CLI
/// prints: the hint below the message says it in `tidings` terms.
const LIBRARY_ADVICE: [&str; 5] = [
    "; run PgOutboxStore::migrate()",
    "; run MongoOutboxStore::ensure_indexes()",
    "; the schema needs migrating",
    "; open it with PgOutboxOptions::layout",
    "; give the inbox another name with PgOutboxOptions::inbox_table",
];

/// `message` without the stores' advice to library users.
pub(crate) fn for_operators(message: &str) -> String {
    let mut text = message.to_owned();
    for advice in LIBRARY_ADVICE {
        while let Some(start) = text.find(advice) {
            // The advice runs to the end of its clause.
            let rest = &text[start + advice.len()..];
            let end = rest
                .find("; ")
                .map_or(text.len(), |i| start + advice.len() + i);
            text.replace_range(start..end, "");
        }
    }
    text
}

/// What to do about `error`, when the CLI knows better than its message.
pub(crate) fn hint(error: &anyhow::Error, store: &StoreArgs) -> Option<String> {
    let message = match error.downcast_ref::<AdminError>()? {
        AdminError::Store(StoreError::Schema(message)) => message,
        AdminError::Inbox(InboxError::Schema(message)) => message,
        _ => return None,
    };
    let migrate = migrate_command(store);
    Some(if message.contains("is rotated") {
        "this outbox is rotated (Layout::Rotated): add --rotated to every command".to_owned()
    } else if message.contains("is a plain table") {
        format!("`{migrate}` converts it to the rotated layout (check that --rotated is meant)")
    } else if message.contains("already exists and is not") {
        "another table has the inbox's name: name the inbox with --inbox-table".to_owned()
    } else if store.store == StoreKind::Mongo {
        format!("`{migrate}` creates the collections and indexes (with the same --mongodb-url)")
    } else {
        format!(
            "`{migrate}` creates or updates the tables (with the same --database-url); \
             to apply them with your own migration tool, take the SQL from \
             `{migrate} --print-sql`"
        )
    })
}

/// The `tidings migrate` command for the store `args` name, with every
/// name option that differs from its default (the URL left out: it may
/// hold a password).
pub(crate) fn migrate_command(args: &StoreArgs) -> String {
    let mut command = String::from("tidings migrate");
    let mut option = |name: &str, value: Option<&str>| {
        if let Some(value) = value {
            command.push_str(&format!(" --{name} {}", shell_word(value)));
        }
    };
    match args.store {
        StoreKind::Postgres => {
            option("schema", args.schema.as_deref());
            option("table", args.table.as_deref());
            option("inbox-table", args.inbox_table.as_deref());
            if args.rotated {
                command.push_str(" --rotated");
            }
        }
        StoreKind::Mongo => {
            option("store", Some("mongo"));
            let database = Some(args.mongodb_database.as_str()).filter(|d| *d != "tidings");
            option("mongodb-database", database);
            option("collection", args.collection.as_deref());
            option("inbox-collection", args.inbox_collection.as_deref());
        }
    }
    command
}

/// `value` as one shell word: as it is when plain, else single-quoted.
fn shell_word(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.:/@".contains(c));
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use clap::FromArgMatches;

    use super::*;
    use crate::args::Cli;

    fn store(args: &[&str]) -> StoreArgs {
        let matches = crate::help::command()
            .try_get_matches_from(["tidings"].iter().chain(args).chain(&["verify"]))
            .unwrap();
        Cli::from_arg_matches(&matches).unwrap().store
    }

    #[test]
    fn the_migrate_command_keeps_the_names_given() {
        assert_eq!(migrate_command(&store(&[])), "tidings migrate");
        assert_eq!(
            migrate_command(&store(&[
                "--schema",
                "billing",
                "--table",
                "outbox",
                "--rotated"
            ])),
            "tidings migrate --schema billing --table outbox --rotated"
        );
        assert_eq!(
            migrate_command(&store(&["--store", "mongo", "--mongodb-database", "shop"])),
            "tidings migrate --store mongo --mongodb-database shop"
        );
    }

    #[test]
    fn library_advice_is_cut() {
        let message =
            r#"missing outbox table "billing"."tidings_outbox"; run PgOutboxStore::migrate()"#;
        assert_eq!(
            for_operators(message),
            r#"missing outbox table "billing"."tidings_outbox""#
        );
        let message = "relation x does not exist; run PgOutboxStore::migrate() to create or update the schema";
        assert_eq!(for_operators(message), "relation x does not exist");
        assert_eq!(for_operators("broker refused"), "broker refused");
    }

    #[test]
    fn odd_values_are_quoted_for_the_shell() {
        assert_eq!(shell_word("billing"), "billing");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("a b"), "'a b'");
    }
}
