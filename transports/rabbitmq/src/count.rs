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
//! queue; that header is read only on a message whose `x-death` shows it
//! expired out of the queue's delay queue, so a publisher cannot set a
//! count by sending it.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};

use crate::names::delay_queue;
use crate::properties::{PRIOR_DELIVERIES_HEADER, QUORUM_DELIVERY_COUNT, number, text};

/// How many times this message was delivered, this time included.
pub(crate) fn delivery_count(properties: &BasicProperties, redelivered: bool, queue: &str) -> u32 {
    let Some(headers) = properties.headers() else {
        return if redelivered { 2 } else { 1 };
    };
    let get = |name: &str| headers.inner().get(name).and_then(number);
    let prior = match deaths(headers, &delay_queue(queue), "expired").next() {
        Some(_) => get(PRIOR_DELIVERIES_HEADER).unwrap_or(0),
        None => 0,
    };
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
    deaths(headers, queue, "rejected")
        .filter_map(|entry| entry.get("count").and_then(number))
        .sum()
}

/// The `x-death` entries recording that `queue` dead-lettered the message
/// for `reason`.
fn deaths<'a>(
    headers: &'a FieldTable,
    queue: &'a str,
    reason: &'a str,
) -> impl Iterator<Item = &'a std::collections::BTreeMap<lapin::types::ShortString, AMQPValue>> {
    let entries = match headers.inner().get("x-death") {
        Some(AMQPValue::FieldArray(deaths)) => deaths.as_slice(),
        _ => &[],
    };
    entries
        .iter()
        .filter_map(|death| match death {
            AMQPValue::FieldTable(entry) => Some(entry.inner()),
            _ => None,
        })
        .filter(move |entry| {
            let field = |name: &str| entry.get(name).and_then(text);
            field("queue").as_deref() == Some(queue) && field("reason").as_deref() == Some(reason)
        })
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

    fn death(queue: &str, reason: &str, count: i64) -> AMQPValue {
        let mut death = FieldTable::default();
        death.insert(
            "queue".into(),
            AMQPValue::LongString(LongString::from(queue)),
        );
        death.insert(
            "reason".into(),
            AMQPValue::LongString(LongString::from(reason)),
        );
        death.insert("count".into(), AMQPValue::LongLongInt(count));
        AMQPValue::FieldTable(death)
    }

    #[test]
    fn prior_deliveries_count_only_after_the_delay_queue() {
        let prior = (
            PRIOR_DELIVERIES_HEADER,
            AMQPValue::LongString(LongString::from("99")),
        );
        assert_eq!(delivery_count(&with(vec![prior.clone()]), false, "q"), 1);
        let back = FieldArray::from(vec![death("q.delay", "expired", 1)]);
        let props = with(vec![prior, ("x-death", AMQPValue::FieldArray(back))]);
        assert_eq!(delivery_count(&props, false, "q"), 100);
    }

    #[test]
    fn prior_deliveries_and_rejections_add_up() {
        let deaths = FieldArray::from(vec![
            death("q", "rejected", 2),
            death("q.delay", "expired", 1),
        ]);
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
