//! The rule a database's identifiers follow, for the checks every store
//! makes of the table and collection names it is given.

use super::StoreError;

/// What a store accepts as one of its names: its length limit, its first
/// and following characters, and the hint its error gives.
///
/// ```
/// use tidings_core::port::StoreNameRule;
///
/// const RULE: StoreNameRule = StoreNameRule {
///     max_len: 63,
///     first: |c| c.is_ascii_lowercase() || c == '_',
///     rest: |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_',
///     hint: "use lower-case ASCII letters, digits and '_', starting with a letter or '_'",
/// };
/// assert!(RULE.check("table", "tidings_outbox").is_ok());
/// assert!(RULE.check("table", "Robert'); drop table students;--").is_err());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StoreNameRule {
    /// The longest name, in bytes.
    pub max_len: usize,
    /// Whether a name may start with this character.
    pub first: fn(char) -> bool,
    /// Whether a name may hold this byte.
    pub rest: fn(u8) -> bool,
    /// What to do instead, in the error.
    pub hint: &'static str,
}

impl StoreNameRule {
    /// Checks `name`, a `kind` (`"outbox table"`, `"inbox collection"`).
    ///
    /// # Errors
    ///
    /// [`StoreError::Invalid`] naming the name, its kind and what is wrong
    /// when it is empty, too long or holds a character the rule refuses.
    pub fn check(&self, kind: &str, name: &str) -> Result<(), StoreError> {
        let why = if name.is_empty() {
            "it is empty".to_owned()
        } else if name.len() > self.max_len {
            format!(
                "it is {} bytes long, the limit is {}",
                name.len(),
                self.max_len
            )
        } else if !name.starts_with(self.first) || !name.bytes().all(self.rest) {
            self.hint.to_owned()
        } else {
            return Ok(());
        };
        Err(self.invalid(kind, name, &why))
    }

    /// The error refusing `name`, a `kind`, for `why`: for a store's own
    /// further checks.
    pub fn invalid(&self, kind: &str, name: &str, why: &str) -> StoreError {
        StoreError::Invalid(format!("{kind} name {name:?} is invalid: {why}"))
    }
}
