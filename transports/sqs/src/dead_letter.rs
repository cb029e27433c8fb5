//! Moving a received message to its queue's dead-letter queue, with the
//! reason.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_sqs::types::{Message, MessageAttributeValue, MessageSystemAttributeName};
use tidings_core::port::truncate_reason;
use tidings_core::{
    DEAD_LETTER_REASON_HEADER, FIRST_FAILURE_HEADER, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER,
    REPLAYED_REASON_HEADER,
};

use crate::attributes::{MAX_MESSAGE_ATTRIBUTES, pack, text_value, to_sqs, unpack};
use crate::context::QueueContext;
use crate::error::{Failure, Kind, call};
use crate::options::PublisherOptions;
use crate::queues::Target;

/// The longest reason carried, in bytes.
const MAX_REASON_LEN: usize = 1024;

/// Sends a copy of `message` with `reason` in [`DEAD_LETTER_REASON_HEADER`]
/// and the parking record (see [`parking_record`]) to `target`. The body is
/// kept as received; the attributes are repacked so the reason fits SQS's
/// limit of ten.
pub(crate) async fn send_copy(
    ctx: &QueueContext,
    target: &Target,
    message: &Message,
    reason: &str,
) -> Result<(), Failure> {
    let record = parking_record(message, SystemTime::now());
    let attributes = attributes_with_reason(message.message_attributes(), reason, record)
        .map_err(|reason| Failure::new(Kind::Rejected, reason))?;
    let mut request = ctx
        .client
        .send_message()
        .queue_url(&target.url)
        .message_body(message.body().unwrap_or("-"))
        .set_message_attributes(Some(attributes));
    if target.is_fifo() {
        let system = |name| message.attributes().and_then(|a| a.get(&name)).cloned();
        let group = system(MessageSystemAttributeName::MessageGroupId)
            .unwrap_or_else(|| PublisherOptions::DEFAULT_MESSAGE_GROUP.to_owned());
        let dedup = system(MessageSystemAttributeName::MessageDeduplicationId)
            .or_else(|| message.message_id().map(str::to_owned))
            .unwrap_or_default();
        request = request
            .message_group_id(group)
            .message_deduplication_id(dedup);
    }
    call(ctx.options.request_timeout, request.send())
        .await
        .map(drop)
}

/// What the acker records on a message it parks: the deliveries it had
/// (SQS's `ApproximateReceiveCount`), the time it was parked, and the time
/// its first delivery failed. SQS redelivers by visibility, never by a copy
/// the acker could write to, so that time is the message's own
/// [`FIRST_FAILURE_HEADER`] if it carries one, else its first receive.
/// Times are milliseconds since the Unix epoch.
fn parking_record(message: &Message, now: SystemTime) -> [(&'static str, String); 3] {
    let system = |name| message.attributes().and_then(|a| a.get(&name)).cloned();
    let now = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        .to_string();
    let first_failure = message_headers(message.message_attributes())
        .remove(FIRST_FAILURE_HEADER)
        .or_else(|| system(MessageSystemAttributeName::ApproximateFirstReceiveTimestamp))
        .unwrap_or_else(|| now.clone());
    let deliveries =
        system(MessageSystemAttributeName::ApproximateReceiveCount).unwrap_or_else(|| "1".into());
    [
        (PARKED_DELIVERIES_HEADER, deliveries),
        (PARKED_AT_HEADER, now),
        (FIRST_FAILURE_HEADER, first_failure),
    ]
}

/// The attributes of `raw` plus the reason and the parking record, within
/// ten: attributes that are not text (binary ones) are kept as they are,
/// the text ones repacked.
fn attributes_with_reason(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
    reason: &str,
    record: [(&'static str, String); 3],
) -> Result<HashMap<String, MessageAttributeValue>, String> {
    let mut text = message_headers(raw);
    text.insert(
        DEAD_LETTER_REASON_HEADER.to_owned(),
        truncate_reason(reason, MAX_REASON_LEN).to_owned(),
    );
    text.extend(record.map(|(name, value)| (name.to_owned(), value)));
    repack(text, raw)
}

/// `text` packed into the slots SQS leaves beside the binary attributes of
/// `raw`, which are kept as they are; or why it does not fit.
fn repack(
    text: BTreeMap<String, String>,
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> Result<HashMap<String, MessageAttributeValue>, String> {
    let binary: HashMap<String, MessageAttributeValue> = raw
        .into_iter()
        .flatten()
        .filter(|(_, value)| text_value(value).is_none())
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let slots = MAX_MESSAGE_ATTRIBUTES.saturating_sub(binary.len());
    let mut attributes = to_sqs(&pack(text, slots)?);
    attributes.extend(binary);
    Ok(attributes)
}

/// The text attributes as they are, for a pack that does not parse.
fn plain_text(raw: Option<&HashMap<String, MessageAttributeValue>>) -> BTreeMap<String, String> {
    raw.into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), text_value(value)?.to_owned())))
        .collect()
}

/// The attributes of a dead letter's copy replayed to its queue: the
/// dead letter's, the reason moved from [`DEAD_LETTER_REASON_HEADER`] to
/// [`REPLAYED_REASON_HEADER`] and the parking record dropped (the copy
/// starts a fresh count), repacked to fit SQS's ten; or why they do not
/// fit.
///
/// # Errors
///
/// Why, in words, when the text attributes cannot be packed into the slots
/// SQS leaves beside the binary ones.
pub fn replay_attributes(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> Result<HashMap<String, MessageAttributeValue>, String> {
    let mut text = message_headers(raw);
    text.retain(|name, _| !is_parking_record(name));
    if let Some(reason) = text.remove(DEAD_LETTER_REASON_HEADER) {
        text.insert(REPLAYED_REASON_HEADER.to_owned(), reason);
    }
    repack(text, raw)
}

/// The text attributes of a received message by name, the transport's
/// pack unpacked: its headers and CloudEvents attributes.
pub fn message_headers(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> BTreeMap<String, String> {
    unpack(raw).unwrap_or_else(|_| plain_text(raw))
}

/// Whether `name` is one of the headers the parking acker records.
fn is_parking_record(name: &str) -> bool {
    [
        PARKED_DELIVERIES_HEADER,
        PARKED_AT_HEADER,
        FIRST_FAILURE_HEADER,
    ]
    .contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::PACKED_ATTRIBUTE;

    fn text(value: &str) -> MessageAttributeValue {
        MessageAttributeValue::builder()
            .data_type("String")
            .string_value(value)
            .build()
            .unwrap()
    }

    #[test]
    fn the_reason_fits_ten_attributes() {
        let raw: HashMap<_, _> = (0..10).map(|n| (format!("a{n}"), text("v"))).collect();
        let out = attributes_with_reason(Some(&raw), "handler said no", record()).unwrap();
        assert_eq!(out.len(), 10);
        let back = unpack(Some(&out)).unwrap();
        assert_eq!(back.len(), 14);
        assert_eq!(back[DEAD_LETTER_REASON_HEADER], "handler said no");
        assert!(out.contains_key(PACKED_ATTRIBUTE));
    }

    #[test]
    fn a_replayed_copy_carries_the_reason_under_its_own_name() {
        let raw: HashMap<_, _> = (0..10).map(|n| (format!("a{n}"), text("v"))).collect();
        let parked = attributes_with_reason(Some(&raw), "handler said no", record()).unwrap();
        let replayed = replay_attributes(Some(&parked)).unwrap();
        let back = message_headers(Some(&replayed));
        assert_eq!(back.len(), 11, "{back:?}");
        assert!(!back.contains_key(PARKED_AT_HEADER));
        assert!(!back.contains_key(DEAD_LETTER_REASON_HEADER));
        assert_eq!(back[REPLAYED_REASON_HEADER], "handler said no");
    }

    fn record() -> [(&'static str, String); 3] {
        [
            (PARKED_DELIVERIES_HEADER, "4".into()),
            (PARKED_AT_HEADER, "1700000000000".into()),
            (FIRST_FAILURE_HEADER, "1690000000000".into()),
        ]
    }

    fn received(
        attributes: &[(&str, &str)],
        system: &[(MessageSystemAttributeName, &str)],
    ) -> Message {
        let mut message = Message::builder();
        for (name, value) in attributes {
            message = message.message_attributes(*name, text(value));
        }
        for (name, value) in system {
            message = message.attributes(name.clone(), *value);
        }
        message.build()
    }

    #[test]
    fn parking_records_the_receive_count_and_the_first_receive() {
        let message = received(
            &[],
            &[
                (MessageSystemAttributeName::ApproximateReceiveCount, "3"),
                (
                    MessageSystemAttributeName::ApproximateFirstReceiveTimestamp,
                    "1690000000000",
                ),
            ],
        );
        let now = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_000);
        let record = parking_record(&message, now);
        assert_eq!(
            record,
            [
                (PARKED_DELIVERIES_HEADER, "3".to_owned()),
                (PARKED_AT_HEADER, "1700000000000".to_owned()),
                (FIRST_FAILURE_HEADER, "1690000000000".to_owned()),
            ]
        );
    }

    #[test]
    fn a_first_failure_already_recorded_is_kept() {
        let message = received(&[(FIRST_FAILURE_HEADER, "1600000000000")], &[]);
        let record = parking_record(&message, SystemTime::now());
        assert_eq!(record[0].1, "1");
        assert_eq!(record[2].1, "1600000000000");
    }
}
