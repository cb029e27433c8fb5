//! Messages from producers outside tidings, sent and read with a plain
//! AMQP client.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable, LongString};
use tidings_core::DEAD_LETTER_REASON_HEADER;
use tidings_testing::broker::foreign::{ForeignMessage, ForeignProducer};

use super::{Rabbit, plain_channel, raw_get};

impl ForeignProducer for Rabbit {
    fn binding_prefixes(&self) -> &'static [&'static str] {
        &["ce-", "ce_", "cloudEvents_", "cloudEvents:"]
    }

    /// Attributes as headers, the content type as the AMQP property, as
    /// the AMQP binding has it.
    async fn send_foreign(&self, queue: &str, message: &ForeignMessage) {
        let mut headers = FieldTable::default();
        for (name, value) in &message.attributes {
            if name != "content-type" {
                let value = AMQPValue::LongString(LongString::from(value.as_str()));
                headers.insert(name.as_str().into(), value);
            }
        }
        let mut properties = BasicProperties::default().with_headers(headers);
        if let Some(content_type) = message.content_type() {
            properties = properties.with_content_type(content_type.into());
        }
        let (conn, ch) = plain_channel().await;
        ch.basic_publish(
            queue.into(),
            queue.into(),
            Default::default(),
            &message.body,
            properties,
        )
        .await
        .expect("publish")
        .await
        .expect("confirm");
        let _ = conn.close(200, "OK".into()).await;
    }

    async fn dead_letter_reason(&self, dead_letter_queue: &str) -> Option<String> {
        for _ in 0..50 {
            if let Some((properties, _)) = raw_get(dead_letter_queue).await {
                let headers = properties.headers().clone().unwrap_or_default();
                return match headers.inner().get(DEAD_LETTER_REASON_HEADER) {
                    Some(AMQPValue::LongString(reason)) => Some(reason.to_string()),
                    _ => None,
                };
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        None
    }
}
