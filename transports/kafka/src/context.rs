//! The consumer's callbacks: what a rebalance does to the offsets being
//! tracked.
//!
//! On revoke, deliveries being handled on the revoked partitions get
//! [`SourceOptions::revoke_grace`](crate::SourceOptions::revoke_grace) to
//! settle; then each partition's safe position (its lowest unsettled
//! offset) is committed synchronously and the partition forgotten, so its
//! next owner starts exactly where nothing unsettled is skipped. Later
//! settlements of those deliveries change nothing: the next owner
//! redelivers them, and the inbox absorbs the duplicate.
//!
//! On assign, the group's committed positions tell whether a partition
//! resumes after an earlier owner; the records read from such a partition
//! before this consumer settles the first of them may have been delivered
//! to that owner before it died, so their deliveries count as
//! redeliveries.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, KafkaResult};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

use crate::offsets::{Offsets, PartitionKey};
use crate::watch::Watch;

/// How often a revoke looks whether deliveries in hand have settled.
const SETTLE_POLL: Duration = Duration::from_millis(10);

/// The consumer's callbacks.
pub(crate) struct Context {
    pub(crate) offsets: Arc<Mutex<Offsets>>,
    pub(crate) revoke_grace: Duration,
    pub(crate) request_timeout: Duration,
    /// Names TLS and SASL failures in the log.
    pub(crate) watch: Watch,
}

impl ClientContext for Context {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        self.watch.log(level, facility, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.watch.error(error, reason);
    }
}

impl ConsumerContext for Context {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(list) = rebalance {
            self.revoke(consumer, &keys(list));
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(list) = rebalance {
            self.assign(consumer, list);
        }
    }

    fn commit_callback(&self, result: KafkaResult<()>, list: &TopicPartitionList) {
        let Err(error) = result else { return };
        tracing::warn!(%error, "offset commit failed; committing again");
        let mut offsets = self.offsets.lock().expect("offsets");
        for element in list.elements() {
            if let Offset::Offset(position) = element.offset() {
                offsets.commit_failed(&(element.topic().to_owned(), element.partition()), position);
            }
        }
    }
}

impl Context {
    fn revoke(&self, consumer: &BaseConsumer<Self>, partitions: &[PartitionKey]) {
        let deadline = Instant::now() + self.revoke_grace;
        loop {
            let in_hand = self.offsets.lock().expect("offsets").in_hand(partitions);
            if in_hand == 0 {
                break;
            }
            if Instant::now() >= deadline {
                tracing::info!(
                    in_hand,
                    "partitions revoked with deliveries unsettled; their next owner redelivers them"
                );
                break;
            }
            std::thread::sleep(SETTLE_POLL);
        }
        let mut list = TopicPartitionList::new();
        {
            let mut offsets = self.offsets.lock().expect("offsets");
            for key in partitions {
                if let Some(position) = offsets.revoke(key) {
                    // Adding to a fresh list with a valid offset cannot fail.
                    let _ = list.add_partition_offset(&key.0, key.1, Offset::Offset(position));
                }
            }
        }
        tracing::debug!(partitions = partitions.len(), "partitions revoked");
        if list.count() > 0 {
            if let Err(error) = consumer.commit(&list, CommitMode::Sync) {
                tracing::warn!(%error, "commit on revoke failed; the next owner may redeliver settled records");
            }
        }
    }

    fn assign(&self, consumer: &BaseConsumer<Self>, list: &TopicPartitionList) {
        let committed = consumer.committed_offsets(list.clone(), self.request_timeout);
        let mut offsets = self.offsets.lock().expect("offsets");
        for key in keys(list) {
            // Without an answer, assume an earlier owner: one extra count
            // costs the inbox a write, a missed one could hide a crash loop.
            let resumed = committed.as_ref().map_or(true, |c| {
                c.find_partition(&key.0, key.1)
                    .is_some_and(|e| matches!(e.offset(), Offset::Offset(_)))
            });
            offsets.assign(key, resumed);
        }
        tracing::debug!(partitions = list.count(), "partitions assigned");
    }
}

fn keys(list: &TopicPartitionList) -> Vec<PartitionKey> {
    list.elements()
        .iter()
        .map(|e| (e.topic().to_owned(), e.partition()))
        .collect()
}
