//! The sampler: what the charts draw. At a fixed interval it takes every
//! route's backlog, every consumer's marks and every dead-letter queue's
//! depth, and keeps the last hour of samples in memory.
//!
//! The oldest dead letter's age costs a pass over a RabbitMQ queue, so it
//! is read only when a queue is first seen, has shrunk (the oldest may
//! have gone), has filled from empty, or every five minutes; in between
//! its age grows with the clock.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::Render;
use super::brokers::{Queue, Source};
use crate::Admin;
use crate::dead_letters::DeadLetterFilter;
use crate::stores::AdminStore;

/// How long samples are kept.
pub const KEPT: Duration = Duration::from_secs(3600);

/// How often the oldest dead letter's age is read again at the latest.
const OLDEST_EVERY: Duration = Duration::from_secs(300);

/// One sample of the whole pipeline.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Sample {
    /// When, in milliseconds since the Unix epoch.
    at_ms: u64,
    /// Per route.
    routes: BTreeMap<String, RouteSample>,
    /// Marks per consumer.
    consumers: BTreeMap<String, u64>,
    /// Depth per dead-letter queue (`broker/queue`).
    dead_letters: BTreeMap<String, u64>,
}

/// One route in a sample.
#[derive(Debug, Clone, Serialize)]
struct RouteSample {
    /// Pending and in-flight rows.
    backlog: u64,
    failed: u64,
    retained: u64,
    oldest_pending_secs: Option<f64>,
    /// The relay's published counter, when the page's metrics have it.
    published_total: Option<f64>,
}

/// The oldest dead letter of a queue as last read.
#[derive(Debug, Clone, Copy)]
struct Oldest {
    depth: u64,
    age_secs: Option<f64>,
    read_at: Instant,
}

/// The samples of the last hour and the oldest dead letters' ages.
#[derive(Debug)]
pub(crate) struct History {
    every: Duration,
    samples: Mutex<VecDeque<Sample>>,
    oldest: Mutex<HashMap<String, Oldest>>,
}

impl History {
    /// Samples taken every `every`.
    pub(crate) fn new(every: Duration) -> Self {
        Self {
            every,
            samples: Mutex::new(VecDeque::new()),
            oldest: Mutex::new(HashMap::new()),
        }
    }

    /// The interval between samples.
    pub(crate) fn every(&self) -> Duration {
        self.every
    }

    /// Every sample kept, oldest first.
    pub(crate) fn samples(&self) -> Vec<Sample> {
        lock(&self.samples).iter().cloned().collect()
    }

    /// The age of the oldest dead letter of `broker`'s `queue`, now.
    pub(crate) fn oldest(&self, broker: &str, queue: &str) -> Option<f64> {
        let oldest = *lock(&self.oldest).get(&key(broker, queue))?;
        oldest
            .age_secs
            .map(|age| age + oldest.read_at.elapsed().as_secs_f64())
    }

    /// The latest depth of each queue and its oldest age, as
    /// `(broker, queue, depth, oldest age)`.
    pub(crate) fn dead_letter_gauges(&self) -> Vec<(String, String, u64, Option<f64>)> {
        let latest = lock(&self.samples).back().cloned();
        let Some(latest) = latest else {
            return Vec::new();
        };
        latest
            .dead_letters
            .iter()
            .filter_map(|(key, depth)| {
                let (broker, queue) = key.split_once('/')?;
                let age = self.oldest(broker, queue).filter(|_| *depth > 0);
                Some((broker.to_owned(), queue.to_owned(), *depth, age))
            })
            .collect()
    }

    fn push(&self, sample: Sample) {
        let keep = (KEPT.as_millis() / self.every.as_millis().max(1)) as usize + 1;
        let mut samples = lock(&self.samples);
        samples.push_back(sample);
        while samples.len() > keep {
            samples.pop_front();
        }
    }

    /// Whether the oldest age of `key` at `depth` must be read again.
    fn stale(&self, key: &str, depth: u64) -> bool {
        match lock(&self.oldest).get(key) {
            None => true,
            Some(old) => {
                depth < old.depth
                    || (old.depth == 0 && depth > 0)
                    || old.read_at.elapsed() >= OLDEST_EVERY
            }
        }
    }
}

/// What the sampler reads.
pub(crate) struct Sampler<S> {
    pub(crate) admin: Admin<S>,
    pub(crate) sources: Arc<[Source]>,
    pub(crate) metrics: Option<Render>,
    pub(crate) history: Weak<History>,
}

impl<S: AdminStore> Sampler<S> {
    /// Samples until the history is dropped with the page.
    pub(crate) async fn run(self) {
        let Some(every) = self.history.upgrade().map(|h| h.every()) else {
            return;
        };
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(history) = self.history.upgrade() else {
                return;
            };
            let sample = self.sample(&history).await;
            history.push(sample);
        }
    }

    async fn sample(&self, history: &History) -> Sample {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let published = self
            .metrics
            .as_ref()
            .map(|render| published_totals(&render()));
        let mut sample = Sample {
            at_ms,
            routes: BTreeMap::new(),
            consumers: BTreeMap::new(),
            dead_letters: BTreeMap::new(),
        };
        match self.admin.status().await {
            Ok(status) => {
                for r in status.routes {
                    let total = published.as_ref().and_then(|p| p.get(&r.route).copied());
                    let line = RouteSample {
                        backlog: r.pending + r.in_flight,
                        failed: r.failed,
                        retained: r.retained,
                        oldest_pending_secs: r.oldest_pending_secs,
                        published_total: total,
                    };
                    sample.routes.insert(r.route, line);
                }
                for c in status.consumers {
                    sample.consumers.insert(c.consumer, c.marks);
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the admin page's sampler could not read the status")
            }
        }
        for queue in super::brokers::queues(&self.sources) {
            if let Ok(depth) = queue.reader.depth(&queue.name).await {
                read_oldest(history, &queue, depth.messages).await;
                sample
                    .dead_letters
                    .insert(key(&queue.broker, &queue.name), depth.messages);
            }
        }
        sample
    }
}

/// Reads the age of the oldest dead letter of `queue` when it is due.
async fn read_oldest(history: &History, queue: &Queue, depth: u64) {
    let key = key(&queue.broker, &queue.name);
    if !history.stale(&key, depth) {
        return;
    }
    let age_secs = if depth == 0 {
        None
    } else {
        let first = DeadLetterFilter {
            limit: 1,
            ..DeadLetterFilter::default()
        };
        match queue.reader.list(&queue.name, &first).await {
            Ok(letters) => letters
                .first()
                .and_then(|l| l.parked_age_secs.or(l.age_secs)),
            Err(_) => return,
        }
    };
    let read = Oldest {
        depth,
        age_secs,
        read_at: Instant::now(),
    };
    lock(&history.oldest).insert(key, read);
}

/// The `tidings_relay_published_total` of each route in Prometheus text.
fn published_totals(text: &str) -> HashMap<String, f64> {
    let mut totals = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("tidings_relay_published_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let route = labels
            .split(',')
            .find_map(|l| l.strip_prefix("route=\""))
            .and_then(|v| v.strip_suffix('"'));
        if let (Some(route), Ok(value)) = (route, value.trim().parse::<f64>()) {
            *totals.entry(route.to_owned()).or_insert(0.0) += value;
        }
    }
    totals
}

fn key(broker: &str, queue: &str) -> String {
    format!("{broker}/{queue}")
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_totals_are_summed_per_route() {
        let text = "# TYPE tidings_relay_published_total counter\n\
            tidings_relay_published_total{route=\"orders\",relay=\"a\"} 3\n\
            tidings_relay_published_total{relay=\"b\",route=\"orders\"} 4\n\
            tidings_relay_published_total{route=\"billing\"} 1\n\
            tidings_relay_failed_total{route=\"orders\"} 9\n";
        let totals = published_totals(text);
        assert_eq!(totals.get("orders"), Some(&7.0));
        assert_eq!(totals.get("billing"), Some(&1.0));
        assert_eq!(totals.len(), 2);
    }

    #[test]
    fn the_oldest_age_is_read_again_when_a_queue_shrinks_or_fills() {
        let history = History::new(Duration::from_secs(1));
        assert!(history.stale("r/q", 3));
        let read = Oldest {
            depth: 3,
            age_secs: Some(10.0),
            read_at: Instant::now(),
        };
        lock(&history.oldest).insert("r/q".into(), read);
        assert!(!history.stale("r/q", 3));
        assert!(!history.stale("r/q", 5));
        assert!(history.stale("r/q", 2));
        assert!(history.oldest("r", "q").is_some_and(|age| age >= 10.0));
    }
}
