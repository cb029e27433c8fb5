//! Messages from producers outside tidings, sent and read with the plain
//! SQS client.

use std::collections::HashMap;

use tidings_core::DEAD_LETTER_REASON_HEADER;
use tidings_sqs::aws_sdk_sqs::types::MessageAttributeValue;
use tidings_testing::broker::foreign::{ForeignMessage, ForeignProducer};

use super::{Sqs, client, queue_url};

/// The URL of `queue`.
async fn url(queue: &str) -> String {
    queue_url(&client().await, queue).await
}

impl ForeignProducer for Sqs {
    /// SQS attribute names may not hold `:`.
    fn binding_prefixes(&self) -> &'static [&'static str] {
        &["ce-", "ce_", "cloudEvents_"]
    }

    /// Attributes, the content type among them, as `String` message
    /// attributes; the body as text. Standard queues only.
    async fn send_foreign(&self, queue: &str, message: &ForeignMessage) {
        let attributes: HashMap<String, MessageAttributeValue> = message
            .attributes
            .iter()
            .map(|(name, value)| {
                let value = MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(value)
                    .build()
                    .expect("attribute");
                (name.clone(), value)
            })
            .collect();
        let body = String::from_utf8(message.body.clone()).expect("text body");
        client()
            .await
            .send_message()
            .queue_url(url(queue).await)
            .set_message_attributes(Some(attributes))
            .message_body(body)
            .send()
            .await
            .expect("send raw");
    }

    async fn dead_letter_reason(&self, dead_letter_queue: &str) -> Option<String> {
        let parked = client()
            .await
            .receive_message()
            .queue_url(url(dead_letter_queue).await)
            .message_attribute_names("All")
            .wait_time_seconds(5)
            .send()
            .await
            .expect("receive from the dead-letter queue");
        let message = parked.messages().first()?;
        let attributes = message.message_attributes()?;
        Some(
            attributes
                .get(DEAD_LETTER_REASON_HEADER)?
                .string_value()?
                .to_owned(),
        )
    }
}
