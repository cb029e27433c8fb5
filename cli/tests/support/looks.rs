//! The ten ways an operator looks at a dead letter without touching it:
//! lists with and without filters, `show`, and the dry runs of replay and
//! purge; each run through the `tidings` binary.

use assert_cmd::Command;

use super::{json, stdout};

/// Looks at the dead letter `id` of `queue` (parked for a reason
/// containing `reason`, of type `event_type`) `rounds` times in each of
/// the ten ways, `tidings` giving the command with its broker options;
/// checks every look finds it.
pub(crate) fn look(
    tidings: impl Fn() -> Command,
    queue: &str,
    id: &str,
    reason: &str,
    event_type: &str,
    rounds: usize,
) {
    let list = ["dead-letters", "list", "--queue", queue];
    for _ in 0..rounds {
        let table = stdout(tidings().args(list));
        assert!(table.contains(id), "list: {table}");
        let listed = json(tidings().args(list));
        assert_eq!(listed["messages"][0]["id"], id, "list --json: {listed}");
        for filter in [
            ["--reason", reason],
            ["--event-type", event_type],
            ["--older-than", "0s"],
            ["--id", id],
        ] {
            let found = json(tidings().args(list).args(filter));
            let ids = found["messages"].as_array().expect("messages");
            assert!(
                ids.len() == 1 && ids[0]["id"] == id,
                "list {filter:?}: {found}"
            );
        }
        let shown = stdout(tidings().args(["dead-letters", "show", "--queue", queue, id]));
        assert!(shown.contains(reason), "show: {shown}");
        for dry_run in [
            vec!["replay", "--dry-run"],
            vec!["purge", "--all", "--dry-run"],
            vec!["purge", "--id", id, "--dry-run"],
        ] {
            let report = json(
                tidings()
                    .arg("dead-letters")
                    .args(&dry_run)
                    .args(["--queue", queue]),
            );
            assert_eq!(
                (&report["matched"], &report["done"], &report["ids"][0]),
                (&1.into(), &0.into(), &id.into()),
                "{dry_run:?}: {report}"
            );
        }
    }
}
