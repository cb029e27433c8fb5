//! The consumer's metric names and the values of their `outcome` label,
//! listed once in `docs/src/operations/metrics.md`.

/// Deliveries settled, by `outcome`: [`ACKED`], [`DUPLICATE`], [`PARKED`]
/// or [`RETRIED`], with `queue` and `consumer`.
pub(crate) const MESSAGES: &str = "tidings_consumer_messages_total";
/// How long handlers ran, in seconds, by `outcome` (`ok` or `error`),
/// with `queue` and `consumer`.
pub(crate) const HANDLER_SECONDS: &str = "tidings_consumer_handler_seconds";
/// Settlements the broker did not take, with `queue` and `consumer`.
pub(crate) const SETTLE_ERRORS: &str = "tidings_consumer_settle_errors_total";

/// Handled and acked.
pub(crate) const ACKED: &str = "acked";
/// Seen before and acked without running the handler.
pub(crate) const DUPLICATE: &str = "duplicate";
/// Dead-lettered.
pub(crate) const PARKED: &str = "parked";
/// Nacked for redelivery.
pub(crate) const RETRIED: &str = "retried";
