//! A Kafka dead-letter topic read whole, as records and the markers that
//! resolve some of them.
//!
//! The reader joins no consumer group and commits nothing: it assigns
//! itself every partition from its low watermark up to the high watermark
//! read when it started, so reading leaves no trace on the brokers and two
//! reads of an unchanged topic see the same records.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tidings_core::{
    FIRST_FAILURE_HEADER, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER, REPLAYED_REASON_HEADER,
};
use tidings_kafka::rdkafka::consumer::{BaseConsumer, Consumer};
use tidings_kafka::rdkafka::error::{KafkaError, RDKafkaErrorCode};
use tidings_kafka::rdkafka::message::{Header, Headers, OwnedHeaders};
use tidings_kafka::rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::{DeadLetter, is_bookkeeping};
use crate::AdminError;

/// The header of a marker record naming the record it resolves, as
/// `<partition>/<offset>` of the dead-letter topic.
pub const RESOLVED_HEADER: &str = "x-tidings-resolved";
/// The header of a marker record saying how the record was resolved:
/// `replayed` or `deleted`.
pub const RESOLUTION_HEADER: &str = "x-tidings-resolution";

/// The group id the reader names without joining it.
const READER_GROUP: &str = "tidings-dead-letter-reader";

/// How long one poll waits for a record.
const POLL: Duration = Duration::from_millis(100);

/// One record of a dead-letter topic, kept whole so it can be replayed.
#[derive(Debug, Clone)]
pub(super) struct Parked {
    pub(super) partition: i32,
    pub(super) offset: i64,
    pub(super) key: Option<Vec<u8>>,
    pub(super) payload: Vec<u8>,
    pub(super) headers: Vec<(String, Option<Vec<u8>>)>,
    /// When the record was written, in milliseconds since the Unix epoch.
    pub(super) timestamp: Option<i64>,
}

impl Parked {
    /// Where the record is: `<partition>/<offset>`, what a marker names.
    pub(super) fn position(&self) -> String {
        format!("{}/{}", self.partition, self.offset)
    }

    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| String::from_utf8(v.clone()?).ok())
    }

    /// The record as an operator sees it, its parking headers read.
    pub(super) fn letter(&self) -> DeadLetter {
        let headers: BTreeMap<String, String> = self
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.clone(), String::from_utf8(v.clone()?).ok()?)))
            .collect();
        let id = self.header("ce_id").unwrap_or_else(|| self.position());
        let mut letter = DeadLetter::new(id, headers, &self.payload);
        letter.event_type = self.header("ce_type");
        let sent = self
            .header("ce_time")
            .and_then(|t| humantime::parse_rfc3339_weak(&t).ok())
            .or_else(|| self.timestamp.and_then(millis));
        letter.age_secs = sent.map(age);
        let at = |name| self.header(name)?.parse().ok().and_then(millis);
        letter.parked_age_secs = at(PARKED_AT_HEADER).map(age);
        letter.first_failure_age_secs = at(FIRST_FAILURE_HEADER).map(age);
        letter.deliveries = self
            .header(PARKED_DELIVERIES_HEADER)
            .and_then(|n| n.parse().ok());
        letter
    }

    /// The headers of the replayed copy: the record's without the
    /// parking and delivery bookkeeping, with the parking reason under
    /// [`REPLAYED_REASON_HEADER`], so the copy starts with a fresh count.
    pub(super) fn replay_headers(&self) -> OwnedHeaders {
        let mut headers = OwnedHeaders::new();
        for (name, value) in &self.headers {
            if !is_bookkeeping(name) && !name.eq_ignore_ascii_case(REPLAYED_REASON_HEADER) {
                headers = headers.insert(Header {
                    key: name,
                    value: value.as_deref(),
                });
            }
        }
        if let Some(reason) = self.header(tidings_core::DEAD_LETTER_REASON_HEADER) {
            headers = headers.insert(Header {
                key: REPLAYED_REASON_HEADER,
                value: Some(reason.as_bytes()),
            });
        }
        headers
    }
}

fn millis(ms: i64) -> Option<SystemTime> {
    Some(UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).ok()?))
}

fn age(at: SystemTime) -> f64 {
    SystemTime::now()
        .duration_since(at)
        .unwrap_or_default()
        .as_secs_f64()
}

/// The records of a dead-letter topic not resolved by a marker, in
/// partition and offset order.
pub(super) fn unresolved(records: Vec<Parked>) -> Vec<Parked> {
    let resolved: HashSet<String> = records
        .iter()
        .filter_map(|r| r.header(RESOLVED_HEADER))
        .collect();
    records
        .into_iter()
        .filter(|r| r.header(RESOLVED_HEADER).is_none() && !resolved.contains(&r.position()))
        .collect()
}

/// Every record of `topic` up to the high watermarks read at the start.
/// Blocking: run it off the async runtime.
///
/// # Errors
///
/// [`AdminError::UnknownQueue`] when the topic does not exist;
/// [`AdminError::Broker`] when the brokers fail or the read takes longer
/// than `timeout`.
pub(super) fn read_topic(
    mut config: ClientConfig,
    topic: &str,
    timeout: Duration,
    hint: &'static str,
) -> Result<Vec<Parked>, AdminError> {
    // librdkafka wants a group id before it assigns partitions; the
    // reader never joins the group (it assigns, never subscribes) and
    // never commits, so the group keeps no trace of it.
    let consumer: BaseConsumer = config
        .set("group.id", READER_GROUP)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        // The end of a partition shows as an empty fetch, for which the
        // broker would otherwise wait 500 ms.
        .set("fetch.wait.max.ms", "10")
        .create()
        .map_err(broker)?;
    let partitions = partitions(&consumer, topic, timeout, hint)?;
    let mut assignment = TopicPartitionList::new();
    let mut ends = BTreeMap::new();
    for partition in partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, partition, timeout)
            .map_err(broker)?;
        if high > low {
            assignment
                .add_partition_offset(topic, partition, Offset::Offset(low))
                .map_err(broker)?;
            ends.insert(partition, high);
        }
    }
    let mut records = Vec::new();
    if ends.is_empty() {
        return Ok(records);
    }
    consumer.assign(&assignment).map_err(broker)?;
    let deadline = Instant::now() + timeout;
    while !ends.is_empty() {
        if Instant::now() > deadline {
            return Err(AdminError::Broker(
                format!("reading {topic:?} took longer than {timeout:?}").into(),
            ));
        }
        let Some(message) = consumer.poll(POLL) else {
            // A partition whose last offsets hold no record a consumer sees
            // (a transaction marker, a compacted gap) ends by position.
            forget_passed(&consumer, &mut ends);
            continue;
        };
        let message = message.map_err(broker)?;
        let (partition, offset) = (message.partition(), message.offset());
        let Some(&end) = ends.get(&partition) else {
            continue;
        };
        if offset + 1 >= end {
            ends.remove(&partition);
        }
        if offset >= end {
            continue;
        }
        records.push(Parked {
            partition,
            offset,
            key: message.key().map(<[u8]>::to_vec),
            payload: message.payload().unwrap_or_default().to_vec(),
            headers: message
                .headers()
                .map(|h| {
                    h.iter()
                        .map(|h| (h.key.to_owned(), h.value.map(<[u8]>::to_vec)))
                        .collect()
                })
                .unwrap_or_default(),
            timestamp: message.timestamp().to_millis(),
        });
    }
    records.sort_by_key(|r| (r.partition, r.offset));
    Ok(records)
}

/// Forgets the partitions whose next fetch position has reached the end.
fn forget_passed(consumer: &BaseConsumer, ends: &mut BTreeMap<i32, i64>) {
    let Ok(positions) = consumer.position() else {
        return;
    };
    for element in positions.elements() {
        if let Offset::Offset(next) = element.offset() {
            if ends
                .get(&element.partition())
                .is_some_and(|&end| next >= end)
            {
                ends.remove(&element.partition());
            }
        }
    }
}

/// The partitions of `topic`, which must exist.
pub(super) fn partitions(
    consumer: &BaseConsumer,
    topic: &str,
    timeout: Duration,
    hint: &'static str,
) -> Result<Vec<i32>, AdminError> {
    let metadata = consumer
        .fetch_metadata(Some(topic), timeout)
        .map_err(broker)?;
    let unknown = || AdminError::UnknownQueue {
        queue: topic.to_owned(),
        hint,
    };
    let found = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .ok_or_else(unknown)?;
    match found.error().map(RDKafkaErrorCode::from) {
        None if !found.partitions().is_empty() => {
            Ok(found.partitions().iter().map(|p| p.id()).collect())
        }
        None | Some(RDKafkaErrorCode::UnknownTopicOrPartition | RDKafkaErrorCode::UnknownTopic) => {
            Err(unknown())
        }
        Some(code) => Err(AdminError::Broker(
            format!("topic {topic:?} is not available: {code}").into(),
        )),
    }
}

pub(super) fn broker(error: KafkaError) -> AdminError {
    AdminError::Broker(Box::new(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked(offset: i64, headers: &[(&str, &str)]) -> Parked {
        Parked {
            partition: 0,
            offset,
            key: None,
            payload: b"{\"id\":7}".to_vec(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), Some(v.as_bytes().to_vec())))
                .collect(),
            timestamp: Some(0),
        }
    }

    fn names_and_values(headers: &OwnedHeaders) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|h| {
                let value = String::from_utf8_lossy(h.value.unwrap_or_default());
                (h.key.to_owned(), value.into_owned())
            })
            .collect()
    }

    #[test]
    fn a_replayed_copy_keeps_the_event_and_carries_the_reason() {
        let record = parked(
            3,
            &[
                ("ce_id", "e-1"),
                ("ce_type", "order.placed"),
                ("traceparent", "00-a-b-01"),
                ("x-dead-letter-reason", "handler: bad total"),
                ("x-tidings-origin", "orders/0/5"),
                ("x-tidings-prior-deliveries", "3"),
                (PARKED_DELIVERIES_HEADER, "3"),
                (PARKED_AT_HEADER, "1000"),
                (FIRST_FAILURE_HEADER, "500"),
                (REPLAYED_REASON_HEADER, "an older reason"),
            ],
        );
        assert_eq!(
            names_and_values(&record.replay_headers()),
            [
                ("ce_id", "e-1"),
                ("ce_type", "order.placed"),
                ("traceparent", "00-a-b-01"),
                (REPLAYED_REASON_HEADER, "handler: bad total"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn a_letter_reads_the_parking_headers() {
        let letter = parked(
            3,
            &[
                ("ce_id", "e-1"),
                ("ce_type", "order.placed"),
                ("x-dead-letter-reason", "handler: bad total"),
                (PARKED_DELIVERIES_HEADER, "3"),
                (PARKED_AT_HEADER, "1000"),
            ],
        )
        .letter();
        assert_eq!(letter.id, "e-1");
        assert_eq!(letter.event_type.as_deref(), Some("order.placed"));
        assert_eq!(letter.reason.as_deref(), Some("handler: bad total"));
        assert_eq!(letter.deliveries, Some(3));
        assert!(letter.parked_age_secs.is_some_and(|a| a > 1e9));
        assert_eq!(letter.first_failure_age_secs, None);
        assert_eq!(parked(4, &[]).letter().id, "0/4");
    }

    #[test]
    fn markers_and_what_they_resolve_are_left_out() {
        let records = vec![
            parked(0, &[("ce_id", "a")]),
            parked(1, &[("ce_id", "b")]),
            parked(
                2,
                &[(RESOLVED_HEADER, "0/0"), (RESOLUTION_HEADER, "deleted")],
            ),
        ];
        let left: Vec<_> = unresolved(records).iter().map(Parked::position).collect();
        assert_eq!(left, ["0/1"]);
    }
}
