//! The length limits a queue and its dead-letter queue share.

use super::kind::Overflow;

/// `x-max-length`, `x-max-length-bytes` and `x-overflow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Limits {
    pub(crate) max_length: Option<u64>,
    pub(crate) max_length_bytes: Option<u64>,
    pub(crate) overflow: Option<Overflow>,
}

impl Limits {
    /// Whether either length limit is set.
    pub(crate) fn bounded(&self) -> bool {
        self.max_length.is_some() || self.max_length_bytes.is_some()
    }
}
