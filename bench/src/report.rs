//! Figures: one measured value, its raw limit where there is one, and the
//! goal it is held to; printed as a line each and as a markdown table.

use std::fmt::Write as _;
use std::time::Duration;

use crate::cpu::{CpuTime, Group};

/// What a figure is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Goal {
    /// No goal; the figure is informative.
    None,
    /// The value divided by the raw limit is at least this.
    RatioAtLeast(f64),
    /// The value divided by the raw limit is at most this (times and
    /// counts, where less is better).
    RatioAtMost(f64),
    /// The value is at most this.
    AtMost(f64),
    /// The value is at least this.
    AtLeast(f64),
    /// The value is exactly this (counts that must match).
    Equal(f64),
}

/// One measured figure.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    /// The scenario it belongs to.
    pub(crate) scenario: String,
    /// What was measured.
    pub(crate) measure: String,
    /// The value.
    pub(crate) value: f64,
    /// Its unit.
    pub(crate) unit: &'static str,
    /// The raw limit measured in the same run, same unit.
    pub(crate) limit: Option<f64>,
    /// The goal.
    pub(crate) goal: Goal,
}

impl Figure {
    /// A figure without a raw limit or goal.
    pub(crate) fn new(scenario: &str, measure: &str, value: f64, unit: &'static str) -> Self {
        Self {
            scenario: scenario.to_owned(),
            measure: measure.to_owned(),
            value,
            unit,
            limit: None,
            goal: Goal::None,
        }
    }

    /// A rate in events per second.
    pub(crate) fn rate(scenario: &str, measure: &str, events: usize, took: Duration) -> Self {
        let per_sec = events as f64 / took.as_secs_f64().max(1e-9);
        Self::new(scenario, measure, per_sec, "/s")
    }

    /// A duration in milliseconds.
    pub(crate) fn millis(scenario: &str, measure: &str, value: Duration) -> Self {
        Self::new(scenario, measure, value.as_secs_f64() * 1e3, "ms")
    }

    /// The CPU time a side spent per 1,000 events, split between the bench,
    /// PostgreSQL and RabbitMQ in its measure.
    pub(crate) fn cpu_per_thousand(
        scenario: &str,
        side: &str,
        cpu: CpuTime,
        events: usize,
    ) -> Self {
        let per = |d: Duration| d.as_secs_f64() * 1e6 / events.max(1) as f64;
        let pooler = match cpu[Group::Pooler].is_zero() {
            true => String::new(),
            false => format!(" + PgBouncer {:.1}", per(cpu[Group::Pooler])),
        };
        let measure = format!(
            "CPU per 1,000 events, {side} (bench {:.1} + PostgreSQL {:.1} + RabbitMQ {:.1}{pooler} ms)",
            per(cpu[Group::Bench]),
            per(cpu[Group::Postgres]),
            per(cpu[Group::Rabbitmq]),
        );
        Self::new(scenario, &measure, per(cpu.total()), "ms")
    }

    /// Sets the raw limit.
    pub(crate) fn limit(mut self, limit: f64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets the goal.
    pub(crate) fn goal(mut self, goal: Goal) -> Self {
        self.goal = goal;
        self
    }

    /// The value over the raw limit.
    pub(crate) fn ratio(&self) -> Option<f64> {
        self.limit.filter(|l| *l > 0.0).map(|l| self.value / l)
    }

    /// Whether the goal holds; `None` without a goal.
    pub(crate) fn holds(&self) -> Option<bool> {
        match self.goal {
            Goal::None => None,
            Goal::RatioAtLeast(min) => Some(self.ratio().is_some_and(|r| r >= min)),
            Goal::RatioAtMost(max) => Some(self.ratio().is_some_and(|r| r <= max)),
            Goal::AtMost(max) => Some(self.value <= max),
            Goal::AtLeast(min) => Some(self.value >= min),
            Goal::Equal(want) => Some(self.value == want),
        }
    }

    /// The figure as one line.
    pub(crate) fn line(&self) -> String {
        let mut line = format!(
            "{} | {}: {}",
            self.scenario,
            self.measure,
            value(self.value, self.unit)
        );
        if let (Some(limit), Some(ratio)) = (self.limit, self.ratio()) {
            let _ = write!(line, " (raw {}, ratio {ratio:.2})", value(limit, self.unit));
        }
        if let Some(holds) = self.holds() {
            let verdict = if holds { "holds" } else { "MISSED" };
            let _ = write!(line, " [goal {}: {verdict}]", goal(self.goal, self.unit));
        }
        line
    }
}

/// Where a scenario hands each figure as it is measured.
pub(crate) type Report<'a> = &'a mut dyn FnMut(Figure);

/// Every figure as a markdown table.
pub(crate) fn table(figures: &[Figure]) -> String {
    let mut out = String::from(
        "| scenario | measure | value | raw limit | ratio | goal | holds |\n\
         |---|---|---:|---:|---:|---|---|\n",
    );
    for f in figures {
        let limit = f.limit.map_or(String::new(), |l| value(l, f.unit));
        let ratio = f.ratio().map_or(String::new(), |r| format!("{r:.2}"));
        let holds = match f.holds() {
            None => "",
            Some(true) => "yes",
            Some(false) => "**no**",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {limit} | {ratio} | {} | {holds} |",
            f.scenario,
            f.measure,
            value(f.value, f.unit),
            goal(f.goal, f.unit)
        );
    }
    out
}

fn value(v: f64, unit: &str) -> String {
    match unit {
        "/s" => format!("{v:.0}/s"),
        "ms" => format!("{v:.2} ms"),
        "MB" => format!("{v:.1} MB"),
        "" => format!("{v:.0}"),
        // A share of a whole, or one quantity over another of its kind.
        "share" => format!("{v:.2}"),
        _ => format!("{v:.2} {unit}"),
    }
}

fn goal(goal: Goal, unit: &str) -> String {
    match goal {
        Goal::None => String::new(),
        Goal::RatioAtLeast(min) => format!("ratio ≥ {min}"),
        Goal::RatioAtMost(max) => format!("ratio ≤ {max}"),
        Goal::AtMost(max) => format!("≤ {}", value(max, unit)),
        Goal::AtLeast(min) => format!("≥ {}", value(min, unit)),
        Goal::Equal(want) => format!("= {}", value(want, unit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_and_goals() {
        let f = Figure::new("s", "m", 95.0, "/s")
            .limit(100.0)
            .goal(Goal::RatioAtLeast(0.95));
        assert_eq!(f.holds(), Some(true));
        assert!(f.line().contains("ratio 0.95"));
        let f = Figure::new("s", "p99", 12.0, "ms").goal(Goal::AtMost(10.0));
        assert_eq!(f.holds(), Some(false));
        assert!(table(&[f]).contains("**no**"));
        let f = Figure::new("s", "p99", 3.0, "ms")
            .limit(1.0)
            .goal(Goal::RatioAtMost(2.0));
        assert_eq!(f.holds(), Some(false));
        assert!(f.line().contains("ratio ≤ 2"), "{}", f.line());
    }
}
