//! Tables for people, JSON for scripts, and every write to stdout.
//!
//! Everything the CLI prints goes through [`line`] (or [`json`] and
//! [`field`], which use it). A reader that closes the pipe early, as
//! `tidings status | head -1` does, ends the command quietly with success,
//! as `ls | head` does, rather than with a panic or an error.

use std::fmt::Display;
use std::io::{ErrorKind, Write};
use std::time::Duration;

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};
use serde::Serialize;

/// Writes `text` and a newline to stdout.
///
/// A closed pipe means the reader has all it wants: the process exits at
/// once with status 0 and says nothing. Any other write error (a full
/// disk behind a redirect) ends it with status 1 and the reason on stderr,
/// since the output it was asked for cannot be delivered.
pub(crate) fn line(text: impl Display) {
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: cannot write the output: {error}");
            std::process::exit(1)
        }
    }
}

/// Prints `value` as pretty JSON.
pub(crate) fn json(value: &impl Serialize) -> anyhow::Result<()> {
    line(serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Prints `value` as JSON or `text` for people.
pub(crate) fn report(json: bool, value: &impl Serialize, text: &str) -> anyhow::Result<()> {
    if json {
        self::json(value)
    } else {
        line(text);
        Ok(())
    }
}

/// A borderless table with `header`, numbers aligned right from column
/// `numbers_from` on.
pub(crate) fn table(header: &[&str], numbers_from: usize) -> Table {
    let mut table = Table::new();
    table.load_preset(NOTHING).set_header(header.to_vec());
    for index in numbers_from..header.len() {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// Seconds as a short human duration, its two largest units (`3m 12s`,
/// `1month 9days`), `-` for none.
pub(crate) fn age(secs: Option<f64>) -> String {
    match secs {
        Some(secs) => {
            let full = humantime::format_duration(Duration::from_secs(secs.max(0.0) as u64));
            full.to_string()
                .split(' ')
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        }
        None => "-".to_owned(),
    }
}

/// A labelled field, for `show` output.
pub(crate) fn field(label: &str, value: impl Display) {
    line(format_args!("{label:<15} {value}"))
}
