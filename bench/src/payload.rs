//! The event every scenario moves: about 200 bytes of JSON.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tidings_core::Envelope;

/// An order event; [`Payload::new`] pads it to about 200 bytes encoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Payload {
    /// The order.
    pub(crate) order_id: i64,
    /// The customer.
    pub(crate) customer: String,
    /// The amount.
    pub(crate) amount_cents: i64,
    /// Padding standing in for line items.
    pub(crate) items: String,
}

impl Payload {
    /// The event of order `n`.
    pub(crate) fn new(n: i64) -> Self {
        Self {
            order_id: n,
            customer: format!("customer-{:06}", n % 1_000),
            amount_cents: 1_000 + n % 10_000,
            items: "x".repeat(120),
        }
    }
}

/// `count` envelopes to `queue`, as staging would make them.
pub(crate) fn envelopes(queue: &str, count: usize) -> anyhow::Result<Vec<Envelope>> {
    (0..count)
        .map(|n| {
            let payload = Bytes::from(serde_json::to_vec(&Payload::new(n as i64))?);
            Ok(Envelope::new(
                "bench-events",
                queue,
                "order.placed",
                payload,
                "application/json",
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn about_two_hundred_bytes() {
        let len = serde_json::to_vec(&super::Payload::new(12_345))
            .unwrap()
            .len();
        assert!((180..=220).contains(&len), "{len}");
    }
}
