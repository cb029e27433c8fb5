//! The thread that polls one consumer: reads records, turns them into
//! deliveries, holds retry records until they are due, commits settled
//! offsets, and leaves the group when the stream is dropped.
//!
//! librdkafka's consumer calls are blocking and its rebalance callbacks run
//! inside `poll`, so the consumer lives on a thread of its own; deliveries
//! reach the async side through a bounded channel, whose capacity is the
//! read-ahead.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};
use tidings_core::port::error_chain;
use tidings_core::{Delivery, SourceError};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, watch};

use crate::acker::{KafkaAcker, Settling};
use crate::context::Context;
use crate::offsets::{PartitionKey, Ticket};
use crate::options::SourceOptions;
use crate::record::Record;

/// How long one `poll` waits for a record.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);

pub(crate) struct PollLoop {
    pub(crate) consumer: BaseConsumer<Context>,
    pub(crate) sender: mpsc::Sender<Item>,
    pub(crate) settling: Arc<Settling>,
    pub(crate) seen: Arc<Seen>,
    pub(crate) options: SourceOptions,
    pub(crate) runtime: Handle,
    /// Set once the consumer has left its group.
    pub(crate) left: watch::Sender<bool>,
}

impl PollLoop {
    /// Runs the loop on a thread of its own.
    pub(crate) fn start(self, queue: &str) {
        let name = format!("kafka-{queue}");
        let spawned = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .spawn(move || self.run());
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start the consumer thread");
        }
    }

    fn run(self) {
        let held = Arc::new(AtomicUsize::new(0));
        let mut paused = false;
        let mut last_commit = Instant::now();
        while !self.sender.is_closed() {
            if last_commit.elapsed() >= self.options.commit_interval {
                self.commit(CommitMode::Async);
                last_commit = Instant::now();
            }
            paused = self.pause_retries(held.load(Ordering::Relaxed), paused);
            let record = match self.consumer.poll(POLL_TIMEOUT) {
                None => continue,
                Some(Ok(message)) => Record::from_message(&message),
                Some(Err(KafkaError::MessageConsumptionFatal(code))) => {
                    tracing::error!(error = %code, "the consumer failed for good");
                    let error = KafkaError::MessageConsumptionFatal(code);
                    let _ = self
                        .sender
                        .blocking_send(Err(SourceError::Transport(Box::new(error))));
                    break;
                }
                Some(Err(error)) => {
                    tracing::warn!(%error, "consumer error");
                    continue;
                }
            };
            if !self.handle(record, &held) {
                break;
            }
        }
        self.commit(CommitMode::Sync);
        tracing::debug!("leaving the consumer group");
        // Dropping the consumer leaves the group; its revoke callback
        // commits what settled meanwhile.
        drop(self.consumer);
        self.left.send_replace(true);
    }

    /// Turns one record into a delivery; `false` when the stream is gone.
    fn handle(&self, record: Record, held: &Arc<AtomicUsize>) -> bool {
        let partition = (record.topic.clone(), record.partition);
        let delivered = self
            .settling
            .offsets
            .lock()
            .expect("offsets")
            .deliver(&partition, record.offset);
        let Some((ticket, resumed)) = delivered else {
            return true;
        };
        let seen_before = self.seen.delivered(&partition, record.offset);
        let control = record.control_headers();
        let envelope = match record.envelope() {
            Ok(envelope) => envelope,
            Err(error) => {
                self.park_unreadable(&ticket, &record, &error_chain(&error));
                return true;
            }
        };
        let deliveries = control
            .prior_deliveries
            .saturating_add(1 + u32::from(resumed || seen_before));
        let acker = KafkaAcker::new(ticket.clone(), record, deliveries, self.settling.clone());
        let delivery = Delivery::new(envelope, Some(deliveries), acker);
        match control.retry_at {
            Some(due) if due > SystemTime::now() => {
                self.hold_until(due, ticket, delivery, held);
                true
            }
            _ => self.sender.blocking_send(Ok((ticket, delivery))).is_ok(),
        }
    }

    /// Keeps a retry record back until it is due, without stopping the
    /// partition behind it.
    fn hold_until(
        &self,
        due: SystemTime,
        ticket: crate::offsets::Ticket,
        delivery: Delivery<KafkaAcker>,
        held: &Arc<AtomicUsize>,
    ) {
        self.settling.offsets.lock().expect("offsets").hold(&ticket);
        held.fetch_add(1, Ordering::Relaxed);
        let wait = due.duration_since(SystemTime::now()).unwrap_or_default();
        let (sender, settling, held) = (self.sender.clone(), self.settling.clone(), held.clone());
        self.runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            held.fetch_sub(1, Ordering::Relaxed);
            if settling.offsets.lock().expect("offsets").release(&ticket) {
                let _ = sender.send(Ok((ticket, delivery))).await;
            }
        });
    }

    /// Dead-letters a record that is not an envelope, with the reason.
    fn park_unreadable(&self, ticket: &crate::offsets::Ticket, record: &Record, reason: &str) {
        let reason = format!("unreadable message: {reason}");
        tracing::warn!(
            messaging.destination.name = %record.topic,
            partition = record.partition,
            offset = record.offset,
            %reason,
            "parking a record that is not an envelope"
        );
        let parked = self
            .runtime
            .block_on(self.settling.dead_letter(record, 1, &reason));
        match parked {
            Ok(()) => self.settling.settle(ticket),
            Err(error) => {
                tracing::error!(error = %error_chain(&error), "cannot park an unreadable record; it stays uncommitted");
                self.settling.offsets.lock().expect("offsets").hold(ticket);
            }
        }
    }

    /// Pauses the assigned retry partitions while too many retry records
    /// are held, and resumes them after; returns whether they are paused.
    fn pause_retries(&self, held: usize, paused: bool) -> bool {
        let want = held >= self.options.max_held;
        if want == paused {
            return paused;
        }
        let Ok(assignment) = self.consumer.assignment() else {
            return paused;
        };
        let mut retries = TopicPartitionList::new();
        for element in assignment.elements() {
            if element.topic() == self.settling.retry_topic {
                retries.add_partition(element.topic(), element.partition());
            }
        }
        let result = match want {
            true => self.consumer.pause(&retries),
            false => self.consumer.resume(&retries),
        };
        match result {
            Ok(()) => want,
            Err(error) => {
                tracing::warn!(%error, "cannot pause or resume the retry topic");
                paused
            }
        }
    }

    /// Commits every position that moved.
    fn commit(&self, mode: CommitMode) {
        let commits = self
            .settling
            .offsets
            .lock()
            .expect("offsets")
            .take_commits();
        if commits.is_empty() {
            return;
        }
        let mut list = TopicPartitionList::new();
        for ((topic, partition), position) in &commits {
            let _ = list.add_partition_offset(topic, *partition, Offset::Offset(*position));
        }
        if let Err(error) = self.consumer.commit(&list, mode) {
            tracing::warn!(%error, "offset commit failed; committing again");
            let mut offsets = self.settling.offsets.lock().expect("offsets");
            for (partition, position) in &commits {
                offsets.commit_failed(partition, *position);
            }
        }
    }
}

/// A delivery on its way to the stream, with its place in the tracker.
pub(crate) type Item = Result<(Ticket, Delivery<KafkaAcker>), SourceError>;

/// The highest offset of each partition this source delivered, across its
/// subscriptions: a record at or below it is a redelivery.
#[derive(Debug, Default)]
pub(crate) struct Seen(Mutex<HashMap<PartitionKey, i64>>);

impl Seen {
    /// Records the delivery of `offset`; whether it was delivered before.
    pub(crate) fn delivered(&self, partition: &PartitionKey, offset: i64) -> bool {
        let mut seen = self.0.lock().expect("seen offsets");
        match seen.get_mut(partition) {
            Some(highest) if *highest >= offset => true,
            Some(highest) => {
                *highest = offset;
                false
            }
            None => {
                seen.insert(partition.clone(), offset);
                false
            }
        }
    }
}
