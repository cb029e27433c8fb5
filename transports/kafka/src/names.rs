//! Topic names: which are legal, and the retry and dead-letter topics that
//! belong to a topic.

/// The suffix of a topic's retry topic.
pub const RETRY_SUFFIX: &str = ".retry";
/// The suffix of a topic's dead-letter topic.
pub const DEAD_LETTER_SUFFIX: &str = ".dlt";
/// Kafka's longest topic name.
const MAX_TOPIC: usize = 249;

/// The retry topic of `topic`: where nacked records wait for their
/// redelivery.
pub fn retry_topic(topic: &str) -> String {
    format!("{topic}{RETRY_SUFFIX}")
}

/// The dead-letter topic of `topic`: where dead-lettered and unreadable
/// records are parked with their reason.
pub fn dead_letter_topic(topic: &str) -> String {
    format!("{topic}{DEAD_LETTER_SUFFIX}")
}

/// Checks that `topic` is a name Kafka accepts: 1 to 249 ASCII letters,
/// digits, `.`, `_` and `-`, and neither `.` nor `..`.
///
/// # Errors
///
/// Why the name is refused.
///
/// ```
/// use tidings_kafka::validate_topic;
///
/// assert!(validate_topic("orders.v1").is_ok());
/// assert!(validate_topic("orders; drop").is_err());
/// ```
pub fn validate_topic(topic: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("topic name {topic:?} is not legal: {why}"));
    if topic.is_empty() {
        return refuse("it is empty");
    }
    if topic.len() > MAX_TOPIC {
        return refuse("it is longer than 249 characters");
    }
    if topic == "." || topic == ".." {
        return refuse("`.` and `..` are reserved");
    }
    match topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        Some(c) => refuse(&format!(
            "{c:?} is not an ASCII letter, digit, `.`, `_` or `-`"
        )),
        None => Ok(()),
    }
}

/// Checks `topic` and that its retry and dead-letter topics fit Kafka's
/// length limit too.
pub(crate) fn validate_with_companions(topic: &str) -> Result<(), String> {
    validate_topic(topic)?;
    validate_topic(&retry_topic(topic))?;
    validate_topic(&dead_letter_topic(topic))
}

#[cfg(test)]
mod tests;
