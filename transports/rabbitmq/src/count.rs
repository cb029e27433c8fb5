//! Delivery counts from what the broker tells.
//!
//! Quorum queues count failed deliveries in `x-delivery-count`, so their
//! counts are exact; the header is read only on a delivery the broker flags
//! as redelivered, since on a first delivery it can only come from the
//! publisher. Classic queues only flag a redelivery, so a classic
//! count is 1 on first delivery and 2 on any later one, plus the times the
//! message was rejected into the dead-letter exchange (its `x-death`
//! entries) — an approximation. On both, a delayed redelivery republishes
//! the message with the deliveries so far in
//! [`PRIOR_DELIVERIES_HEADER`], so the count carries across the delay
//! queue.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};

use crate::properties::{PRIOR_DELIVERIES_HEADER, QUORUM_DELIVERY_COUNT, number, text};

/// How many times this message was delivered, this time included.
pub(crate) fn delivery_count(properties: &BasicProperties, redelivered: bool, queue: &str) -> u32 {
    let Some(headers) = properties.headers() else {
        return if redelivered { 2 } else { 1 };
    };
    let get = |name: &str| headers.inner().get(name).and_then(number);
    let prior = get(PRIOR_DELIVERIES_HEADER).unwrap_or(0);
    let this_copy = match (redelivered, get(QUORUM_DELIVERY_COUNT)) {
        (true, Some(failed)) => failed + 1,
        (true, None) => 2,
        (false, _) => 1,
    };
    let total = prior + rejections(headers, queue) + this_copy;
    u32::try_from(total).unwrap_or(u32::MAX)
}

/// Deliveries of this message that `queue` rejected into its dead-letter
/// exchange, as recorded in `x-death`.
fn rejections(headers: &FieldTable, queue: &str) -> u64 {
    let Some(AMQPValue::FieldArray(deaths)) = headers.inner().get("x-death") else {
        return 0;
    };
    deaths
        .as_slice()
        .iter()
        .filter_map(|death| match death {
            AMQPValue::FieldTable(entry) => Some(entry.inner()),
            _ => None,
        })
        .filter(|entry| {
            let field = |name: &str| entry.get(name).and_then(text);
            field("queue").as_deref() == Some(queue)
                && field("reason").as_deref() == Some("rejected")
        })
        .filter_map(|entry| entry.get("count").and_then(number))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::{FieldArray, LongString};

    fn with(headers: Vec<(&str, AMQPValue)>) -> BasicProperties {
        let mut table = FieldTable::default();
        for (k, v) in headers {
            table.insert(k.into(), v);
        }
        BasicProperties::default().with_headers(table)
    }

    #[test]
    fn first_and_flagged_deliveries_on_classic_queues() {
        assert_eq!(delivery_count(&BasicProperties::default(), false, "q"), 1);
        assert_eq!(delivery_count(&BasicProperties::default(), true, "q"), 2);
    }

    #[test]
    fn quorum_counts_are_exact() {
        let props = with(vec![(QUORUM_DELIVERY_COUNT, AMQPValue::LongLongInt(3))]);
        assert_eq!(delivery_count(&props, true, "q"), 4);
    }

    #[test]
    fn a_first_delivery_ignores_a_published_count() {
        let props = with(vec![(QUORUM_DELIVERY_COUNT, AMQPValue::LongLongInt(42))]);
        assert_eq!(delivery_count(&props, false, "q"), 1);
    }

    #[test]
    fn prior_deliveries_and_rejections_add_up() {
        let mut death = FieldTable::default();
        death.insert("queue".into(), AMQPValue::LongString(LongString::from("q")));
        death.insert(
            "reason".into(),
            AMQPValue::LongString(LongString::from("rejected")),
        );
        death.insert("count".into(), AMQPValue::LongLongInt(2));
        let deaths = FieldArray::from(vec![AMQPValue::FieldTable(death)]);
        let props = with(vec![
            (
                PRIOR_DELIVERIES_HEADER,
                AMQPValue::LongString(LongString::from("3")),
            ),
            ("x-death", AMQPValue::FieldArray(deaths)),
        ]);
        assert_eq!(delivery_count(&props, false, "q"), 6);
    }
}
