//! The chaos scenario at a tiny size: relay and consumer processes killed
//! every few hundred milliseconds lose nothing and double nothing. The
//! scenario itself fails (and the program exits non-zero) when its ledger
//! shows a lost or doubled effect; this also reads the figures it printed.

use std::process::Command;

#[test]
fn killed_relays_and_consumers_lose_and_double_nothing() {
    let output = Command::new(env!("CARGO_BIN_EXE_tidings-bench"))
        .args([
            "chaos",
            "--chaos-events",
            "600",
            "--chaos-kill-every-ms",
            "300",
        ])
        .output()
        .expect("the bench program runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "chaos failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    for line in ["kills: lost: 0 ", "kills: duplicated effects: 0 "] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    let kills = |who: &str| -> u32 {
        let prefix = format!("chaos | {who} kills: ");
        let line = stdout.lines().find_map(|l| l.strip_prefix(&prefix));
        line.and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {who} kills in:\n{stdout}"))
    };
    assert!(
        kills("relay") > 0 && kills("consumer") > 0,
        "nothing was killed:\n{stdout}"
    );
}
