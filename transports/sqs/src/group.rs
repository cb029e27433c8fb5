//! FIFO message groups from ordering keys.
//!
//! SQS takes 1 to 128 printable ASCII characters as a message group id. An
//! ordering key that is one is the group as it is; any other key (longer,
//! or with spaces or non-ASCII characters) becomes `tidings-key-` and 32 hex
//! digits of a 128-bit FNV-1a hash of it, so its events still share one
//! group and keep their order.

use tidings_core::PublishError;

const HASHED_PREFIX: &str = "tidings-key-";
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// A second offset basis, for the upper half of the 128-bit hash.
const FNV_OFFSET_HIGH: u64 = FNV_OFFSET ^ 0x9e37_79b9_7f4a_7c15;

/// The message group of an event: its ordering key, or `default` for events
/// without one.
pub(crate) fn message_group(key: Option<&str>, default: &str) -> Result<String, PublishError> {
    match key {
        Some(key) if is_legal(key) => Ok(key.to_owned()),
        Some(key) => Ok(hashed(key)),
        None if is_legal(default) => Ok(default.to_owned()),
        None => Err(PublishError::Invalid {
            reason: format!(
                "default message group {default:?} is not 1 to 128 printable ascii characters"
            ),
        }),
    }
}

fn is_legal(group: &str) -> bool {
    (1..=128).contains(&group.len()) && group.bytes().all(|b| (33..=126).contains(&b))
}

fn hashed(key: &str) -> String {
    let high = fnv1a(key.as_bytes(), FNV_OFFSET_HIGH);
    let low = fnv1a(key.as_bytes(), FNV_OFFSET);
    format!("{HASHED_PREFIX}{high:016x}{low:016x}")
}

fn fnv1a(bytes: &[u8], offset: u64) -> u64 {
    bytes.iter().fold(offset, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_keys_are_their_own_group() {
        assert_eq!(message_group(Some("order-1"), "d").unwrap(), "order-1");
        assert_eq!(message_group(None, "orders").unwrap(), "orders");
    }

    #[test]
    fn other_keys_hash_to_a_stable_legal_group() {
        let long = "k".repeat(200);
        for key in [long.as_str(), "has space", "ünïcode", ""] {
            let group = message_group(Some(key), "d").unwrap();
            assert!(is_legal(&group), "{group}");
            assert!(group.starts_with(HASHED_PREFIX));
            assert_eq!(group, message_group(Some(key), "other").unwrap());
        }
        assert_ne!(hashed("a b"), hashed("a c"));
    }

    #[test]
    fn the_fnv_hash_matches_its_reference_values() {
        assert_eq!(fnv1a(b"", FNV_OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn an_illegal_default_group_is_refused() {
        assert!(message_group(None, "has space").is_err());
    }
}
