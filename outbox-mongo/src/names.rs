//! Collection names: validated once, when a store is built, so no command
//! ever carries a hostile or unusable name.

use tidings_core::StoreError;
use tidings_core::port::StoreNameRule;

/// The longest collection name accepted, in bytes.
pub const MAX_COLLECTION_NAME_LEN: usize = 64;

/// The validated names of one store's collections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CollectionNames {
    /// The outbox collection.
    pub(crate) outbox: String,
    /// The inbox collection.
    pub(crate) inbox: String,
    /// The inbox's count of handler attempts that have not committed:
    /// the inbox collection's name followed by `_attempts`.
    pub(crate) attempts: String,
    /// Every route ever staged: the outbox collection's name followed by
    /// `_routes`.
    pub(crate) routes: String,
}

impl CollectionNames {
    /// Checks both names; the error says which one is wrong and why.
    pub(crate) fn new(outbox: &str, inbox: &str) -> Result<Self, StoreError> {
        check("outbox collection", outbox)?;
        check("inbox collection", inbox)?;
        if outbox == inbox {
            return Err(StoreError::Invalid(format!(
                "the outbox and inbox collections are both named {outbox:?}; give them different names"
            )));
        }
        let attempts = format!("{inbox}_attempts");
        if outbox == attempts {
            return Err(StoreError::Invalid(format!(
                "the outbox collection {outbox:?} would share its name with the inbox's _attempts collection; give it another name"
            )));
        }
        let routes = format!("{outbox}_routes");
        if inbox == routes || attempts == routes {
            return Err(StoreError::Invalid(format!(
                "the inbox collection {inbox:?} would share a name with the outbox's _routes collection; give it another name"
            )));
        }
        Ok(Self {
            outbox: outbox.to_owned(),
            inbox: inbox.to_owned(),
            attempts,
            routes,
        })
    }
}

/// A name is 1 to [`MAX_COLLECTION_NAME_LEN`] bytes of ASCII letters,
/// digits, `_`, `-` and inner `.`, starting with a letter or `_`, and not in
/// the server's reserved `system.` namespace.
const RULE: StoreNameRule = StoreNameRule {
    max_len: MAX_COLLECTION_NAME_LEN,
    first: |c| c.is_ascii_alphabetic() || c == '_',
    rest: |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'),
    hint: "use ASCII letters, digits, '_', '-' and inner '.', starting with a letter or '_'",
};

fn check(kind: &str, name: &str) -> Result<(), StoreError> {
    RULE.check(kind, name)?;
    if name.ends_with('.') || name.contains("..") {
        return Err(RULE.invalid(kind, name, RULE.hint));
    }
    if name.starts_with("system.") {
        let why = "names starting with \"system.\" are reserved by the server";
        return Err(RULE.invalid(kind, name, why));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_pass() {
        for good in ["tidings_outbox", "orders.outbox", "Outbox-2", "_x"] {
            CollectionNames::new(good, "inbox").unwrap();
        }
    }

    #[test]
    fn hostile_names_are_rejected() {
        let long = "a".repeat(MAX_COLLECTION_NAME_LEN + 1);
        for bad in [
            "",
            "$cmd",
            "out$box",
            "a\0b",
            "a b",
            "system.users",
            "1st",
            "ünï",
            "a..b",
            "trailing.",
            "{\"$ne\": 1}",
            long.as_str(),
        ] {
            let err = CollectionNames::new(bad, "inbox").unwrap_err();
            assert!(matches!(err, StoreError::Invalid(_)), "{bad:?}");
            assert!(err.to_string().contains("outbox collection name"), "{err}");
            let err = CollectionNames::new("outbox", bad).unwrap_err();
            assert!(err.to_string().contains("inbox collection name"), "{err}");
        }
    }

    #[test]
    fn outbox_and_inbox_must_differ() {
        assert!(CollectionNames::new("t", "t").is_err());
        assert!(CollectionNames::new("t_attempts", "t").is_err());
        assert_eq!(
            CollectionNames::new("o", "i").unwrap().attempts,
            "i_attempts"
        );
    }
}
