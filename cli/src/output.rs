//! Tables for people, JSON for scripts.

use std::time::Duration;

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};
use serde::Serialize;

/// Prints `value` as pretty JSON.
pub(crate) fn json(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
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
pub(crate) fn field(label: &str, value: impl std::fmt::Display) {
    println!("{label:<15} {value}");
}
