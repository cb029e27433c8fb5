//! The CPU time each side of a scenario costs, noted as the sides run and
//! reported together once they have.

use std::future::Future;

use crate::cpu::CpuTime;
use crate::report::{Figure, Report};

/// The CPU time of each side measured so far, in the order measured.
#[derive(Debug, Default)]
pub(crate) struct Costs(Vec<(&'static str, CpuTime)>);

impl Costs {
    /// Runs `work` as `side`, noting the CPU time it cost.
    pub(crate) async fn measure<T>(
        &mut self,
        side: &'static str,
        work: impl Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        let before = CpuTime::now();
        let done = work.await?;
        self.0.push((side, CpuTime::now() - before));
        Ok(done)
    }

    /// Reports each side's CPU time per 1,000 of `events`, under
    /// `scenario`.
    pub(crate) fn report(self, scenario: &str, events: usize, report: Report<'_>) {
        for (side, cpu) in self.0 {
            report(Figure::cpu_per_thousand(scenario, side, cpu, events));
        }
    }
}
