//! What the dead-letter tests check of the reports and letters `tidings
//! dead-letters` prints as JSON.

use assert_cmd::Command;
use predicates::str::contains;
use serde_json::Value;

/// A replay or purge `report` matched `matched` dead letters and did
/// `done` of them.
#[track_caller]
pub(crate) fn assert_done(report: &Value, matched: u64, done: u64) {
    assert_eq!(
        (&report["matched"], &report["done"]),
        (&matched.into(), &done.into()),
        "{report}"
    );
}

/// The dead `letter` was parked for a reason containing `reason`.
#[track_caller]
pub(crate) fn assert_reason(letter: &Value, reason: &str) {
    let parked_for = letter["reason"].as_str().unwrap_or_default();
    assert!(parked_for.contains(reason), "{letter}");
}

/// Listing the dead letters of `queue` with `tidings` fails, for want of
/// the dead-letter queue or topic `missing`.
pub(crate) fn assert_list_refused(mut tidings: Command, queue: &str, missing: &str) {
    tidings
        .args(["dead-letters", "list", "--queue", queue])
        .assert()
        .code(1)
        .stderr(contains(format!("\"{missing}\" does not exist")));
}
