//! Messages as another CloudEvents producer sends them, made with the
//! CloudEvents SDK so the fixtures do not share tidings' own reading of
//! the spec.

use std::time::SystemTime;

use bytes::Bytes;
use cloudevents::event::{AttributesReader, Data, SpecVersion};
use cloudevents::message::{
    BinaryDeserializer, BinarySerializer, MessageAttributeValue, Result as SdkResult,
};
use cloudevents::{Event, EventBuilder, EventBuilderV10};
use tidings_core::cloudevents::{STRUCTURED_CONTENT_TYPE, event_id_for};
use tidings_core::{Envelope, Headers, truncate_to_micros};
use uuid::Uuid;

/// A message of another producer: attributes (header or message attribute
/// names and values, `content-type` among them where there is one) and a
/// body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignMessage {
    /// The attributes, as the producer names them.
    pub attributes: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl ForeignMessage {
    /// `event` in binary mode, its attributes under `prefix` (`ce-`,
    /// `ce_`, `cloudEvents_`, `cloudEvents:`) and its data content type as
    /// `content-type`.
    pub fn binary(event: &Event, prefix: &str) -> Self {
        let collect = Collect {
            prefix: prefix.to_owned(),
            attributes: Vec::new(),
        };
        event
            .clone()
            .deserialize_binary(collect)
            .expect("the sdk serialises its own event")
    }

    /// `event` in structured mode, labelled with the structured content
    /// type or, with `labelled` false, with no content type at all.
    pub fn structured(event: &Event, labelled: bool) -> Self {
        let attributes = match labelled {
            true => vec![(
                "content-type".to_owned(),
                STRUCTURED_CONTENT_TYPE.to_owned(),
            )],
            false => Vec::new(),
        };
        Self {
            attributes,
            body: serde_json::to_vec(event).expect("the sdk serialises its own event"),
        }
    }

    /// The content type among the attributes, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(name, _)| name == "content-type")
            .map(|(_, value)| value.as_str())
    }
}

/// Events the SDK builds as other producers would: a UUID id and JSON
/// data; a free-form id, text data, a subject and an extension; no time
/// and no data.
pub fn sample_events() -> Vec<Event> {
    let time = chrono::DateTime::parse_from_rfc3339("2026-11-25T14:00:00.123456+02:00")
        .expect("time")
        .with_timezone(&chrono::Utc);
    let events = [
        EventBuilderV10::new()
            .id(Uuid::new_v4().to_string())
            .source("https://shop.example/orders")
            .ty("com.example.order.placed")
            .time(time)
            .data("application/json", serde_json::json!({"id": 17})),
        EventBuilderV10::new()
            .id("A234-1234-1234")
            .source("/billing")
            .ty("com.example.invoice.sent")
            .time(time)
            .subject("invoice/9")
            .extension("region", "eu-west")
            .data("text/plain", "paid in full".to_owned()),
        EventBuilderV10::new()
            .id("42")
            .source("urn:example:ticks")
            .ty("com.example.tick"),
    ];
    events
        .into_iter()
        .map(|builder| builder.build().expect("a valid event"))
        .collect()
}

/// The envelope tidings must read from `event`: its id (or the id
/// tidings makes of a free-form one), type, source, time, content type,
/// data and extensions. A missing time stands for the time of reading,
/// which the expected envelope gives as [`SystemTime::UNIX_EPOCH`].
pub fn expected_envelope(event: &Event) -> Envelope {
    let id = event.id();
    let mut headers = Headers::new();
    let event_id = Uuid::parse_str(id).unwrap_or_else(|_| {
        headers.insert("ce-id".to_owned(), id.to_owned());
        event_id_for(&event.source().to_string(), id)
    });
    if let Some(subject) = event.subject() {
        headers.insert("ce-subject".to_owned(), subject.to_owned());
    }
    for (name, value) in event.iter_extensions() {
        headers.insert(format!("ce-{name}"), value.to_string());
    }
    let payload = match event.data() {
        Some(Data::Json(json)) => Bytes::from(serde_json::to_vec(json).expect("json")),
        Some(Data::String(text)) => Bytes::from(text.clone()),
        Some(Data::Binary(bytes)) => Bytes::from(bytes.clone()),
        None => Bytes::new(),
    };
    let mut envelope = Envelope::new(
        event.source().to_string(),
        "",
        event.ty(),
        payload,
        event
            .datacontenttype()
            .unwrap_or(tidings_core::RAW_CONTENT_TYPE),
    );
    envelope.event_id = event_id;
    envelope.headers = headers;
    envelope.occurred_at = event.time().map_or(SystemTime::UNIX_EPOCH, |time| {
        truncate_to_micros(SystemTime::from(*time))
    });
    envelope
}

/// Collects the SDK's binary-mode attributes under a binding's prefix.
struct Collect {
    prefix: String,
    attributes: Vec<(String, String)>,
}

impl Collect {
    fn put(mut self, name: &str, value: String) -> Self {
        let name = match name {
            "datacontenttype" => "content-type".to_owned(),
            other => format!("{}{other}", self.prefix),
        };
        self.attributes.push((name, value));
        self
    }
}

impl BinarySerializer<ForeignMessage> for Collect {
    fn set_spec_version(self, spec_version: SpecVersion) -> SdkResult<Self> {
        Ok(self.put("specversion", spec_version.to_string()))
    }

    fn set_attribute(self, name: &str, value: MessageAttributeValue) -> SdkResult<Self> {
        Ok(self.put(name, value.to_string()))
    }

    fn set_extension(self, name: &str, value: MessageAttributeValue) -> SdkResult<Self> {
        Ok(self.put(name, value.to_string()))
    }

    fn end_with_data(self, body: Vec<u8>) -> SdkResult<ForeignMessage> {
        Ok(ForeignMessage {
            attributes: self.attributes,
            body,
        })
    }

    fn end(self) -> SdkResult<ForeignMessage> {
        self.end_with_data(Vec::new())
    }
}
