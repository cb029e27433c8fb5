//! Moving a received message to its queue's dead-letter queue, with the
//! reason.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_sqs::types::{Message, MessageAttributeValue, MessageSystemAttributeName};
use tidings_core::{DEAD_LETTER_REASON_HEADER, REPLAYED_REASON_HEADER};

use crate::attributes::{MAX_MESSAGE_ATTRIBUTES, pack, text_value, to_sqs, unpack};
use crate::context::QueueContext;
use crate::error::{Failure, Kind, call};
use crate::options::PublisherOptions;
use crate::queues::Target;

/// The longest reason carried, in bytes.
const MAX_REASON_LEN: usize = 1024;

/// Sends a copy of `message` with `reason` in [`DEAD_LETTER_REASON_HEADER`]
/// to `target`. The body is kept as received; the attributes are repacked
/// so the reason fits SQS's limit of ten.
pub(crate) async fn send_copy(
    ctx: &QueueContext,
    target: &Target,
    message: &Message,
    reason: &str,
) -> Result<(), Failure> {
    let attributes = attributes_with_reason(message.message_attributes(), reason)
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

/// The attributes of `raw` plus the reason, within ten: attributes that are
/// not text (binary ones) are kept as they are, the text ones repacked.
fn attributes_with_reason(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
    reason: &str,
) -> Result<HashMap<String, MessageAttributeValue>, String> {
    let binary: HashMap<String, MessageAttributeValue> = raw
        .into_iter()
        .flatten()
        .filter(|(_, value)| text_value(value).is_none())
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut text = unpack(raw).unwrap_or_else(|_| plain_text(raw));
    text.insert(
        DEAD_LETTER_REASON_HEADER.to_owned(),
        truncate(reason, MAX_REASON_LEN).to_owned(),
    );
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
/// [`REPLAYED_REASON_HEADER`], repacked to fit SQS's ten; or why they do
/// not fit.
pub fn replay_attributes(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> Result<HashMap<String, MessageAttributeValue>, String> {
    let binary: HashMap<String, MessageAttributeValue> = raw
        .into_iter()
        .flatten()
        .filter(|(_, value)| text_value(value).is_none())
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let mut text = message_headers(raw);
    if let Some(reason) = text.remove(DEAD_LETTER_REASON_HEADER) {
        text.insert(REPLAYED_REASON_HEADER.to_owned(), reason);
    }
    let slots = MAX_MESSAGE_ATTRIBUTES.saturating_sub(binary.len());
    let mut attributes = to_sqs(&pack(text, slots)?);
    attributes.extend(binary);
    Ok(attributes)
}

/// The text attributes of a received message by name, the transport's
/// pack unpacked: its headers and CloudEvents attributes.
pub fn message_headers(
    raw: Option<&HashMap<String, MessageAttributeValue>>,
) -> BTreeMap<String, String> {
    unpack(raw).unwrap_or_else(|_| plain_text(raw))
}

fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
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
        let out = attributes_with_reason(Some(&raw), "handler said no").unwrap();
        assert_eq!(out.len(), 10);
        let back = unpack(Some(&out)).unwrap();
        assert_eq!(back.len(), 11);
        assert_eq!(back[DEAD_LETTER_REASON_HEADER], "handler said no");
        assert!(out.contains_key(PACKED_ATTRIBUTE));
    }

    #[test]
    fn a_replayed_copy_carries_the_reason_under_its_own_name() {
        let raw: HashMap<_, _> = (0..10).map(|n| (format!("a{n}"), text("v"))).collect();
        let parked = attributes_with_reason(Some(&raw), "handler said no").unwrap();
        let replayed = replay_attributes(Some(&parked)).unwrap();
        let back = message_headers(Some(&replayed));
        assert_eq!(back.len(), 11);
        assert!(!back.contains_key(DEAD_LETTER_REASON_HEADER));
        assert_eq!(back[REPLAYED_REASON_HEADER], "handler said no");
    }

    #[test]
    fn long_reasons_are_cut_on_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
