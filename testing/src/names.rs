//! Unique names, so tests running in parallel never share a table, queue or
//! collection.

/// `prefix` followed by `_` and 10 random lower-case letters and digits:
/// a legal name for every store and transport.
pub fn unique_name(prefix: &str) -> String {
    let suffix: String = std::iter::repeat_with(random_alnum).take(10).collect();
    format!("{prefix}_{suffix}")
}

/// The consumer `name`, checked; panics on a name that is not legal.
pub fn consumer_name(name: &str) -> tidings_core::ConsumerName {
    tidings_core::ConsumerName::new(name).expect("a legal consumer name")
}

fn random_alnum() -> char {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let n = uuid::Uuid::new_v4().as_bytes()[0] as usize % ALPHABET.len();
    ALPHABET[n] as char
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_legal() {
        let a = super::unique_name("t");
        let b = super::unique_name("t");
        assert_ne!(a, b);
        tidings_core::spec::validate_name("queue", &a).unwrap();
    }
}
