//! Attribute names under every binding's prefix.

use crate::envelope::Headers;

/// The prefixes CloudEvents bindings put before attribute names, in lower
/// case: HTTP, Kafka and the two spellings of AMQP.
const PREFIXES: [&str; 4] = ["ce-", "ce_", "cloudevents_", "cloudevents:"];

/// The name as tidings writes it — `ce-<name>` for a CloudEvents attribute
/// under any binding's prefix, `tidings-<name>` and `content-type` as they
/// are — or `None` for an application header. Matching ignores ASCII case.
pub(super) fn canonical(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    for prefix in PREFIXES {
        if let Some(rest) = lower.strip_prefix(prefix) {
            return Some(format!("ce-{rest}"));
        }
    }
    match lower.starts_with("tidings-") || lower == super::CONTENT_TYPE {
        true => Some(lower),
        false => None,
    }
}

/// Whether `name` is the CloudEvents attribute `attribute` (in lower case)
/// under any binding's prefix, without building the canonical name.
pub(super) fn is_attribute(name: &str, attribute: &str) -> bool {
    let name = name.as_bytes();
    PREFIXES.iter().any(|prefix| {
        let (prefix, attribute) = (prefix.as_bytes(), attribute.as_bytes());
        name.len() == prefix.len() + attribute.len()
            && name[..prefix.len()].eq_ignore_ascii_case(prefix)
            && name[prefix.len()..].eq_ignore_ascii_case(attribute)
    })
}

/// Keeps an attribute tidings has no field for: CloudEvents extensions
/// become headers named `ce-<name>`, and the distributed tracing ones the
/// headers `traceparent` and `tracestate` unless the message has those
/// already. `tidings-*` attributes of a newer tidings are left out.
pub(super) fn extension(headers: &mut Headers, canonical: String, value: &str) {
    match canonical.as_str() {
        "ce-traceparent" | "ce-tracestate" => {
            let plain = canonical["ce-".len()..].to_owned();
            headers.entry(plain).or_insert_with(|| value.to_owned());
        }
        name if name.starts_with("ce-") => {
            headers.insert(canonical, value.to_owned());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_prefix_reads_as_ce() {
        for name in ["ce-id", "CE_id", "cloudEvents_id", "cloudEvents:id"] {
            assert_eq!(canonical(name).as_deref(), Some("ce-id"), "{name}");
        }
        assert_eq!(canonical("Content-Type").as_deref(), Some("content-type"));
        assert_eq!(canonical("tidings-hlc").as_deref(), Some("tidings-hlc"));
        assert_eq!(canonical("traceparent"), None);
        assert_eq!(canonical("cex"), None);
    }

    #[test]
    fn attributes_are_recognised_under_every_prefix() {
        for name in [
            "ce-specversion",
            "CE_SpecVersion",
            "cloudEvents:specversion",
        ] {
            assert!(is_attribute(name, "specversion"), "{name}");
        }
        for name in [
            "specversion",
            "ce-specversions",
            "x-specversion",
            "cé-specversion",
        ] {
            assert!(!is_attribute(name, "specversion"), "{name}");
        }
    }

    #[test]
    fn extensions_keep_their_values() {
        let mut headers = Headers::new();
        headers.insert("tracestate".into(), "own".into());
        extension(&mut headers, "ce-subject".into(), "orders/17");
        extension(&mut headers, "ce-traceparent".into(), "00-a-b-01");
        extension(&mut headers, "ce-tracestate".into(), "theirs");
        extension(&mut headers, "tidings-future".into(), "x");
        assert_eq!(headers["ce-subject"], "orders/17");
        assert_eq!(headers["traceparent"], "00-a-b-01");
        assert_eq!(headers["tracestate"], "own");
        assert_eq!(headers.len(), 3);
    }
}
