//! Header names staging refuses, one list per owner.
//!
//! A header staged under a name that the envelope, the consumer or a broker
//! gives a meaning of its own would be dropped on the way, changed, or
//! acted on: RabbitMQ routes by `CC` and closes the channel when it is not
//! an array; a staged `x-delivery-count` would read as failed deliveries
//! and park the event unhandled; `x-death` would vanish before the
//! handler. So staging refuses every name on these lists, with an error
//! naming the header and its owner, and publishers refuse them again for
//! events that reached a store some other way.
//!
//! ```
//! use tidings_core::reserved;
//!
//! let owner = reserved::owner_of("x-Delivery-Count").unwrap();
//! assert_eq!(owner.owner, "RabbitMQ");
//! assert!(reserved::owner_of("traceparent").is_none());
//! ```

/// Names one party interprets or uses for control. Matching ignores ASCII
/// case, because some parties do and a mixed-case copy is as confusing as
/// the original.
#[derive(Debug, PartialEq, Eq)]
pub struct ReservedNames {
    /// Who gives the names their meaning.
    pub owner: &'static str,
    /// What the owner does with them.
    pub why: &'static str,
    /// Names reserved whole, in lower case.
    pub names: &'static [&'static str],
    /// Prefixes reserved, in lower case.
    pub prefixes: &'static [&'static str],
}

impl ReservedNames {
    /// Whether `name` is one of these names or starts with one of these
    /// prefixes, ignoring ASCII case.
    pub fn reserves(&self, name: &str) -> bool {
        let starts_with = |prefix: &str| {
            name.len() >= prefix.len()
                && name.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
        };
        self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
            || self.prefixes.iter().any(|p| starts_with(p))
    }
}

/// The envelope's own attributes on the wire ([`crate::cloudevents`]).
pub const ENVELOPE: ReservedNames = ReservedNames {
    owner: "the tidings envelope",
    why: "they carry the envelope's own attributes",
    names: &["content-type"],
    prefixes: &["ce-", "ce_", "cloudevents_", "cloudevents:", "tidings-"],
};

/// What tidings' consumers and ackers add to a message: delivery counts
/// carried across delayed redeliveries and dead-letter reasons.
pub const CONSUMER: ReservedNames = ReservedNames {
    owner: "the tidings consumer",
    why: "it counts deliveries and records dead-letter reasons in them",
    names: &[crate::port::DEAD_LETTER_REASON_HEADER],
    prefixes: &["x-tidings-"],
};

/// What RabbitMQ and its common plugins interpret: sender-selected
/// distribution (`CC`, `BCC`), quorum queue delivery counts, dead-letter
/// records, the delayed-message and deduplication plugins, shovels and
/// federation, AMQP 1.0 annotations and stream filters.
pub const RABBITMQ: ReservedNames = ReservedNames {
    owner: "RabbitMQ",
    why: "the broker routes by them, counts deliveries in them or records dead-lettering in them",
    names: &[
        "cc",
        "bcc",
        "x-death",
        "x-delivery-count",
        "x-acquired-count",
        "x-delay",
        "x-deduplication-header",
        "x-received-from",
        "x-shovelled",
        "x-shovelled-timestamp",
    ],
    prefixes: &["x-first-death-", "x-last-death-", "x-opt-", "x-stream-"],
};

/// Every list staging checks, in the order errors name them.
pub const ALL: [&ReservedNames; 3] = [&ENVELOPE, &CONSUMER, &RABBITMQ];

/// The list reserving `name`, if any.
pub fn owner_of(name: &str) -> Option<&'static ReservedNames> {
    ALL.into_iter().find(|list| list.reserves(name))
}

/// The first of `names` that one of `lists` reserves, and why, in the
/// words staging uses; for transports that check the headers of events
/// they are given.
///
/// # Errors
///
/// The refusal, in staging's words, naming the first reserved name and its
/// owner.
///
/// ```
/// use tidings_core::reserved::{self, ENVELOPE};
///
/// let names = ["traceparent".to_owned(), "ce-id".to_owned()];
/// let refused = reserved::check(&names, &[&ENVELOPE]).unwrap_err();
/// assert!(refused.starts_with("header \"ce-id\" is reserved"));
/// ```
pub fn check<'a>(
    names: impl IntoIterator<Item = &'a String>,
    lists: &[&ReservedNames],
) -> Result<(), String> {
    for name in names {
        if let Some(list) = lists.iter().find(|list| list.reserves(name)) {
            return Err(format!(
                "header {name:?} is reserved: {} gives it a meaning, as {}",
                list.owner, list.why
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
