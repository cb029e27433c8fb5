//! Whose inbox and which event: the consumer's name, checked once, and the
//! key every inbox record is filed under.

use std::fmt;

use uuid::Uuid;

use crate::spec::{SpecError, validate_name};

/// A consumer's name, checked once when it is made: letters, digits, `.`,
/// `_` and `-`, as a queue name (see
/// [`validate_name`](crate::spec::validate_name)). Inbox stores take it as
/// it is, so a name reaches their data only after this check.
///
/// ```
/// use tidings_core::ConsumerName;
///
/// let name = ConsumerName::new("billing")?;
/// assert_eq!(name.as_str(), "billing");
/// assert!(ConsumerName::new("billing'; --").is_err());
/// # Ok::<(), tidings_core::SpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConsumerName(String);

impl ConsumerName {
    /// Checks `name` and keeps it.
    ///
    /// # Errors
    ///
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when `name` is not a legal name.
    pub fn new(name: impl Into<String>) -> Result<Self, SpecError> {
        let name = name.into();
        validate_name("consumer", &name)?;
        Ok(Self(name))
    }

    /// A name made from a checked one and a fixed suffix, such as the
    /// name give-up marks are filed under; it may hold characters a
    /// checked name cannot, so it never meets one.
    pub(crate) fn derived(name: String) -> Self {
        Self(name)
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key of `event_id` in this consumer's inbox.
    pub fn key(&self, event_id: Uuid) -> InboxKey<'_> {
        InboxKey {
            consumer: self,
            event_id,
        }
    }
}

impl fmt::Display for ConsumerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ConsumerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// One event in one consumer's inbox: what a mark and an attempt count are
/// filed under. Made by [`ConsumerName::key`].
///
/// ```
/// use tidings_core::ConsumerName;
/// use uuid::Uuid;
///
/// let billing = ConsumerName::new("billing")?;
/// let key = billing.key(Uuid::nil());
/// assert_eq!(key.consumer(), "billing");
/// assert_eq!(key.event_id(), Uuid::nil());
/// # Ok::<(), tidings_core::SpecError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InboxKey<'a> {
    consumer: &'a ConsumerName,
    event_id: Uuid,
}

impl<'a> InboxKey<'a> {
    /// The consumer's name.
    pub fn consumer(&self) -> &'a str {
        self.consumer.as_str()
    }

    /// The event's id.
    pub fn event_id(&self) -> Uuid {
        self.event_id
    }
}
