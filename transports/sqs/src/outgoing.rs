//! One envelope as a `SendMessageBatch` entry.

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use tidings_core::{Envelope, PublishError, reserved};

use crate::attributes;
use crate::group::message_group;
use crate::options::{PublisherOptions, whole_seconds};

/// One message ready to send, with its position in the caller's batch.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) index: usize,
    pub(crate) entry: SendMessageBatchRequestEntry,
    pub(crate) size: usize,
}

impl Outgoing {
    /// The batch entry for one envelope, or why it cannot be sent.
    pub(crate) fn prepare(
        index: usize,
        envelope: &Envelope,
        fifo: bool,
        options: &PublisherOptions,
    ) -> Result<Self, PublishError> {
        // Staging refuses these names already; this catches events that
        // reached the store some other way. SQS itself interprets none.
        reserved::check(
            envelope.headers.keys(),
            &[&reserved::ENVELOPE, &reserved::CONSUMER],
        )
        .map_err(|reason| PublishError::Invalid { reason })?;
        let encoded =
            attributes::encode(envelope).map_err(|reason| PublishError::Invalid { reason })?;
        if encoded.size > options.max_message_size {
            return Err(PublishError::TooLarge {
                size: encoded.size,
                limit: options.max_message_size,
            });
        }
        let mut entry = SendMessageBatchRequestEntry::builder()
            .id(index.to_string())
            .set_message_attributes(Some(encoded.sqs_attributes()))
            .message_body(encoded.body);
        if fifo {
            let key = envelope.ordering_key.as_deref();
            let group = message_group(key, &options.default_message_group)?;
            entry = entry
                .message_group_id(group)
                .message_deduplication_id(envelope.event_id.to_string());
        } else if let Some(delay) = options
            .destinations
            .get(&envelope.destination)
            .and_then(|d| d.delay)
        {
            entry = entry.delay_seconds(whole_seconds(delay));
        }
        let entry = entry.build().map_err(|e| PublishError::Invalid {
            reason: e.to_string(),
        })?;
        Ok(Outgoing {
            index,
            entry,
            size: encoded.size,
        })
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn event(key: Option<&str>) -> Envelope {
        let mut env = Envelope::new("r", "q", "t", Bytes::from_static(b"x"), "text/plain");
        env.ordering_key = key.map(str::to_owned);
        env
    }

    #[test]
    fn fifo_entries_group_by_key_and_dedupe_by_event_id() {
        let options = PublisherOptions::default().default_message_group("orders");
        let keyed = event(Some("customer-1"));
        let out = Outgoing::prepare(3, &keyed, true, &options).unwrap();
        assert_eq!(out.entry.id(), "3");
        assert_eq!(out.entry.message_group_id(), Some("customer-1"));
        let dedup = keyed.event_id.to_string();
        assert_eq!(out.entry.message_deduplication_id(), Some(dedup.as_str()));
        let out = Outgoing::prepare(0, &event(None), true, &options).unwrap();
        assert_eq!(out.entry.message_group_id(), Some("orders"));
    }

    #[test]
    fn standard_entries_take_the_destination_delay_and_no_group() {
        let options = PublisherOptions::default().destination(
            "q",
            crate::DestinationOptions::default().delay(std::time::Duration::from_millis(1500)),
        );
        let out = Outgoing::prepare(0, &event(Some("k")), false, &options).unwrap();
        assert_eq!(out.entry.delay_seconds(), Some(2));
        assert_eq!(out.entry.message_group_id(), None);
    }

    #[test]
    fn oversized_messages_fail_before_sending() {
        let options = PublisherOptions::default().max_message_size(100);
        let mut big = event(None);
        big.payload = Bytes::from(vec![b'x'; 200]);
        let error = Outgoing::prepare(0, &big, false, &options).unwrap_err();
        assert!(
            matches!(error, PublishError::TooLarge { limit: 100, .. }),
            "{error:?}"
        );
    }
}
