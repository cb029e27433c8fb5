//! What OpenTelemetry costs: the stage and drain-rabbitmq scenarios with
//! every messaging span recorded and batched into an exporter that drops
//! them, as a ratio to the same scenarios in the same process with no
//! OpenTelemetry layer recording (the `otel` code compiled, no span
//! enabled: no dearer than a build without the feature).
//!
//! Each scenario runs eight times, without, with, with, without, then
//! with, without, without, with ([`ORDER`]), so a drift over the run (a
//! warming cache, a growing table) weighs on both sides alike and each
//! side runs first as often as second; each side's rate is the mean of
//! its four runs.

use crate::env::Env;
use crate::report::{Figure, Goal, Report};
use crate::sizes::Sizes;
use crate::telemetry::set_exporting;

use super::Scenario;

const NAME: &str = "otel-overhead";
/// Whether each run records spans: ABBA, then BAAB.
const ORDER: [bool; 8] = [false, true, true, false, true, false, false, true];
/// Runs of each side.
const RUNS: f64 = (ORDER.len() / 2) as f64;

/// The figures of each scenario the ratios are taken of: its goal's rate
/// (for drain-rabbitmq the default relay's) and
/// the CPU time that side took per 1,000 events, which a machine busy with
/// other work disturbs less than the rate.
const MEASURED: [(Scenario, &str, &str); 2] = [
    (
        Scenario::Stage,
        "staged transactions",
        "CPU per 1,000 events, staged (",
    ),
    (
        Scenario::DrainRabbitmq,
        " in windows of ",
        "CPU per 1,000 events, relay (default)",
    ),
];

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    for (scenario, rate, cpu) in MEASURED {
        let mut rates = [0.0; 2];
        let mut cpus = [0.0; 2];
        for exporting in ORDER {
            set_exporting(exporting);
            let result = figures_of(scenario, [rate, cpu], env, sizes).await;
            set_exporting(false);
            let [r, c] = result?;
            rates[exporting as usize] += r / RUNS;
            cpus[exporting as usize] += c / RUNS;
        }
        let label = |side: &str| format!("{}, {side}", scenario.name());
        report(Figure::new(
            NAME,
            &label("without OpenTelemetry"),
            rates[0],
            "/s",
        ));
        report(
            Figure::new(NAME, &label("spans to a no-op exporter"), rates[1], "/s")
                .limit(rates[0])
                .goal(Goal::RatioAtLeast(0.95)),
        );
        let cpu_label = |side: &str| label(&format!("CPU per 1,000 events, {side}"));
        report(Figure::new(
            NAME,
            &cpu_label("without OpenTelemetry"),
            cpus[0],
            "ms",
        ));
        report(
            Figure::new(NAME, &cpu_label("spans to a no-op exporter"), cpus[1], "ms")
                .limit(cpus[0]),
        );
    }
    Ok(())
}

/// The values of the first figures of `scenario` whose measures contain
/// each of `measures`.
async fn figures_of(
    scenario: Scenario,
    measures: [&str; 2],
    env: &Env,
    sizes: &Sizes,
) -> anyhow::Result<[f64; 2]> {
    let mut found = [None; 2];
    let mut keep = |figure: Figure| {
        for (slot, measure) in found.iter_mut().zip(measures) {
            if slot.is_none() && figure.measure.contains(measure) {
                *slot = Some(figure.value);
            }
        }
    };
    env.checkpoint().await;
    match scenario {
        Scenario::Stage => super::stage::run(env, sizes, &mut keep).await?,
        _ => super::drain_rabbitmq::run(env, sizes, &mut keep).await?,
    }
    let [Some(rate), Some(cpu)] = found else {
        anyhow::bail!("{} reported no {measures:?}", scenario.name());
    };
    Ok([rate, cpu])
}
