//! The broker's ceiling for tidings' messages: raw lapin publishing (see
//! [`RawPublisher`]) swept over confirm windows and confirm channels, each
//! setting timed over the same rounds; the ceiling is the fastest.

use std::time::Duration;

use tidings_core::Envelope;

use crate::raw_publish::RawPublisher;
use crate::report::{Figure, Report};

/// Confirm windows swept, per channel.
pub(crate) const WINDOWS: [usize; 5] = [100, 250, 500, 1000, 2000];
/// Confirm channels swept, on one connection.
pub(crate) const CHANNELS: [usize; 3] = [1, 2, 4];

/// One setting of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Setting {
    /// Messages awaiting their confirms together on each channel.
    pub(crate) window: usize,
    /// Confirm channels publishing at once, each a run of the messages.
    pub(crate) channels: usize,
}

/// The time each setting of the sweep took over the rounds so far.
#[derive(Debug)]
pub(crate) struct Sweep {
    settings: Vec<Setting>,
    took: Vec<Duration>,
}

impl Default for Sweep {
    fn default() -> Self {
        let settings: Vec<Setting> = CHANNELS
            .iter()
            .flat_map(|&channels| WINDOWS.map(|window| Setting { window, channels }))
            .collect();
        let took = vec![Duration::ZERO; settings.len()];
        Self { settings, took }
    }
}

impl Sweep {
    /// Publishes `envelopes` once with every setting, into `queue` emptied
    /// before each, starting with a different setting in each `round` so
    /// that none always runs first or last.
    pub(crate) async fn round(
        &mut self,
        raw: &RawPublisher,
        queue: &str,
        envelopes: &[Envelope],
        round: usize,
    ) -> anyhow::Result<Duration> {
        let n = self.settings.len();
        let mut took = Duration::ZERO;
        for k in 0..n {
            let i = (round * 7 + k) % n;
            let Setting { window, channels } = self.settings[i];
            raw.purge(queue).await?;
            let t = raw.publish_spread(envelopes, window, channels).await?;
            self.took[i] += t;
            took += t;
        }
        Ok(took)
    }

    /// Every setting's rate over `events` messages, then the fastest's,
    /// which is the ceiling (returned).
    pub(crate) fn report(&self, scenario: &str, events: usize, report: Report<'_>) -> Figure {
        let mut best: Option<Figure> = None;
        for (setting, took) in self.settings.iter().zip(&self.took) {
            let measure = format!(
                "raw publishing, window {} × {} channel{}",
                setting.window,
                setting.channels,
                if setting.channels == 1 { "" } else { "s" }
            );
            let figure = Figure::rate(scenario, &measure, events, *took);
            report(figure.clone());
            if best.as_ref().is_none_or(|b| figure.value > b.value) {
                best = Some(figure);
            }
        }
        let best = best.expect("the sweep has settings");
        let ceiling = Figure::new(
            scenario,
            &format!(
                "raw confirmed publishing, best of the sweep ({})",
                best.measure.trim_start_matches("raw publishing, ")
            ),
            best.value,
            best.unit,
        );
        report(ceiling.clone());
        ceiling
    }

    /// The rate of one setting over `events` messages, where it was swept.
    pub(crate) fn rate(&self, setting: Setting, events: usize) -> Option<f64> {
        let i = self.settings.iter().position(|s| *s == setting)?;
        Some(events as f64 / self.took[i].as_secs_f64().max(1e-9))
    }
}
