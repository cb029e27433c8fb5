//! Asking before a change that cannot be undone.
//!
//! On a terminal the command shows what it would change and asks; without
//! one (a script, a pipe, CI) it refuses unless `--yes` was given, so a
//! destructive command never runs because nobody was there to say no.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::bail;

/// Whether to go on with `what` (for example "delete 3 dead letters from
/// orders.dlq"): `yes` goes on at once; otherwise a person on a terminal is
/// asked, and anything but `y` or `yes` stops.
pub(crate) fn confirm(what: &str, yes: bool) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!("refusing to {what} without a terminal to ask on; pass --yes to go ahead");
    }
    let mut stderr = std::io::stderr();
    write!(stderr, "{what}? [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
