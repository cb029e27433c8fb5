//! Structured mode: the whole event as one JSON object in the body.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde_json::Value;

use super::{AttributeError, DATA_CONTENT_TYPE, from_attributes};
use crate::Envelope;
use crate::codec::JSON_CONTENT_TYPE;

/// The content type of a structured-mode CloudEvents JSON message.
pub const STRUCTURED_CONTENT_TYPE: &str = "application/cloudevents+json";

/// Whether `content_type` names a structured-mode JSON event, parameters
/// such as `charset` aside.
pub fn is_structured(content_type: &str) -> bool {
    media_type(content_type).eq_ignore_ascii_case(STRUCTURED_CONTENT_TYPE)
}

/// Whether a body that came with no content type is a structured event: a
/// JSON object with a `specversion`.
pub(super) fn looks_structured(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        specversion: Option<Value>,
    }
    body.first() == Some(&b'{')
        && serde_json::from_slice::<Probe>(body).is_ok_and(|probe| probe.specversion.is_some())
}

/// Rebuilds an envelope from a structured-mode body: its attributes read
/// as binary-mode ones would, its `data` (JSON or text) or `data_base64`
/// as the payload.
///
/// # Errors
///
/// [`AttributeError::Structured`] when the body is not a JSON object, holds
/// both `data` and `data_base64`, or its `data_base64` is not a base64
/// string; otherwise the errors of [`from_attributes`](super::from_attributes)
/// for its attributes.
///
/// ```
/// use tidings_core::cloudevents::from_structured;
///
/// let body = br#"{"specversion": "1.0", "id": "17", "source": "/shop",
///     "type": "order.placed", "data": {"id": 17}}"#;
/// let envelope = from_structured(body).unwrap();
/// assert_eq!(&envelope.payload[..], br#"{"id":17}"#);
/// assert_eq!(envelope.content_type, "application/json");
/// ```
pub fn from_structured(body: &[u8]) -> Result<Envelope, AttributeError> {
    let structured = |reason: String| AttributeError::Structured(reason);
    let event: Value = serde_json::from_slice(body).map_err(|e| structured(e.to_string()))?;
    let Value::Object(mut event) = event else {
        return Err(structured("the body is not a json object".to_owned()));
    };
    let data = event.remove("data");
    let data_base64 = event.remove("data_base64");
    let mut attributes: Vec<(String, String)> = event
        .into_iter()
        .filter_map(|(name, value)| {
            let text = match value {
                Value::String(text) => text,
                Value::Null => return None,
                other => other.to_string(),
            };
            Some((format!("ce-{name}"), text))
        })
        .collect();
    let content_type = attributes
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(DATA_CONTENT_TYPE))
        .map(|(_, value)| value.clone());
    let payload = match (data, data_base64) {
        (Some(_), Some(_)) => {
            return Err(structured("it has both data and data_base64".to_owned()));
        }
        (None, Some(Value::String(encoded))) => STANDARD
            .decode(encoded)
            .map(Bytes::from)
            .map_err(|e| structured(format!("data_base64 does not decode: {e}")))?,
        (None, Some(_)) => return Err(structured("data_base64 is not a string".to_owned())),
        (Some(Value::String(text)), None) if !is_json(content_type.as_deref()) => Bytes::from(text),
        (Some(value), None) => {
            if content_type.is_none() {
                attributes.push((DATA_CONTENT_TYPE.to_owned(), JSON_CONTENT_TYPE.to_owned()));
            }
            Bytes::from(serde_json::to_vec(&value).map_err(|e| structured(e.to_string()))?)
        }
        (None, None) => Bytes::new(),
    };
    from_attributes(
        attributes.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        payload,
    )
}

/// Whether data of `content_type` is JSON, as CloudEvents assumes when
/// there is none.
fn is_json(content_type: Option<&str>) -> bool {
    let Some(content_type) = content_type else {
        return true;
    };
    let media = media_type(content_type).to_ascii_lowercase();
    media == "application/json" || media == "text/json" || media.ends_with("+json")
}

fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_content_types_match_with_parameters() {
        assert!(is_structured("application/cloudevents+json"));
        assert!(is_structured("Application/CloudEvents+JSON; charset=utf-8"));
        assert!(!is_structured("application/json"));
    }

    #[test]
    fn text_and_base64_data_become_the_payload() {
        let text = br#"{"specversion":"1.0","id":"1","source":"s","type":"t",
            "datacontenttype":"text/plain","data":"hello"}"#;
        let envelope = from_structured(text).unwrap();
        assert_eq!(
            (&envelope.payload[..], envelope.content_type.as_str()),
            (&b"hello"[..], "text/plain")
        );
        let binary = br#"{"specversion":"1.0","id":"1","source":"s","type":"t",
            "datacontenttype":"application/octet-stream","data_base64":"AAEC"}"#;
        assert_eq!(&from_structured(binary).unwrap().payload[..], &[0, 1, 2]);
    }

    #[test]
    fn extensions_of_any_json_type_become_headers() {
        let body = br#"{"specversion":"1.0","id":"1","source":"s","type":"t",
            "subject":"orders/1","priority":3,"urgent":true,"nothing":null}"#;
        let envelope = from_structured(body).unwrap();
        assert_eq!(envelope.headers["ce-subject"], "orders/1");
        assert_eq!(envelope.headers["ce-priority"], "3");
        assert_eq!(envelope.headers["ce-urgent"], "true");
        assert!(!envelope.headers.contains_key("ce-nothing"));
    }

    #[test]
    fn bodies_that_are_not_events_are_refused_with_the_reason() {
        for body in [
            &b"[1]"[..],
            b"{not json",
            br#"{"data":1,"data_base64":"AA=="}"#,
        ] {
            assert!(matches!(
                from_structured(body),
                Err(AttributeError::Structured(_))
            ));
        }
        let missing = br#"{"specversion":"1.0","source":"s","type":"t"}"#;
        assert_eq!(
            from_structured(missing).unwrap_err(),
            AttributeError::Missing("ce-id")
        );
    }

    #[test]
    fn only_json_objects_with_a_specversion_look_structured() {
        assert!(looks_structured(br#"{"specversion":"1.0"}"#));
        assert!(!looks_structured(br#"{"id":1}"#));
        assert!(!looks_structured(b"specversion"));
    }
}
