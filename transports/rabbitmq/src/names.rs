//! The names of what a queue needs beside it: its exchange, its
//! dead-letter exchange and queue, and its delay queue.

/// The exchange [`Topology`](crate::Topology) declares for `queue`: named
/// after it.
pub fn exchange_name(queue: &str) -> String {
    queue.to_owned()
}

/// The dead-letter exchange of `queue`: `<queue>.dlx`.
pub fn dead_letter_exchange(queue: &str) -> String {
    format!("{queue}.dlx")
}

/// The dead-letter queue of `queue`: `<queue>.dlq`.
pub fn dead_letter_queue(queue: &str) -> String {
    format!("{queue}.dlq")
}

/// The delay queue of `queue`: `<queue>.delay`. Messages wait there for
/// their per-message TTL, then the broker dead-letters them back to `queue`.
pub fn delay_queue(queue: &str) -> String {
    format!("{queue}.delay")
}
