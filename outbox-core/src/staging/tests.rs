//! The staging buffer's tests.

use super::*;
use crate::{ManualClock, OrderingMode, SpecError};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// The spec the staging tests stage under.
pub(super) static SPEC: OutboxSpec<u32> = OutboxSpec::json("order-events").destination("orders");

/// A buffer on a manual clock.
pub(super) fn buffer() -> OutboxBuffer {
    let clock: SharedClock = Arc::new(ManualClock::starting_now());
    OutboxBuffer::new(clock.clone(), HybridClock::new(clock))
}

#[test]
fn ids_count_as_chosen_once_set_or_pushed_until_taken() {
    let mut buf = buffer();
    buf.stage(&SPEC, "order.placed", &1).unwrap();
    assert!(!buf.ids_chosen(), "a fresh UUIDv7 cannot be stored yet");
    buf.stage(&SPEC, "order.placed", &2)
        .unwrap()
        .event_id(Uuid::now_v7());
    assert!(buf.ids_chosen());
    let taken = buf.take().unwrap();
    assert!(!buf.ids_chosen(), "taking empties the buffer");
    buf.push(taken[0].clone());
    assert!(buf.ids_chosen(), "a pushed event brings its own id");
}

#[test]
fn stage_encodes_and_applies_options() {
    let mut buf = buffer();
    let id = Uuid::now_v7();
    buf.stage(&SPEC, "order.placed", &7)
        .unwrap()
        .event_id(id)
        .ordering_key("o-1")
        .header("traceparent", "00-1-2-01")
        .correlation_id("c")
        .delay(Duration::from_secs(3));
    let staged = buf.take().unwrap();
    assert_eq!(staged.len(), 1);
    let env = &staged[0].envelope;
    assert_eq!(
        (env.event_id, env.route.as_str(), env.destination.as_str()),
        (id, "order-events", "orders")
    );
    assert_eq!(&env.payload[..], b"7");
    assert_eq!(env.ordering_key.as_deref(), Some("o-1"));
    assert_eq!(env.traceparent(), Some("00-1-2-01"));
    assert_eq!(staged[0].delay, Some(Delay::For(Duration::from_secs(3))));
    assert!(buf.is_empty());
    assert_eq!(SPEC.route().ordering, OrderingMode::Unordered);
}

#[test]
fn spec_problems_fail_at_stage() {
    let mut buf = buffer();
    let bad: OutboxSpec<u32> = OutboxSpec::json("order-events");
    assert!(matches!(
        buf.stage(&bad, "t", &1),
        Err(StageError::Spec(SpecError::NoDestination { .. }))
    ));
    assert!(matches!(
        buf.stage(&SPEC, "", &1),
        Err(StageError::EventType(_))
    ));
    assert!(matches!(
        buf.stage(&SPEC, "a\nb", &1),
        Err(StageError::EventType(_))
    ));
    assert!(buf.is_empty());
}

#[test]
fn payloads_that_do_not_encode_fail_at_stage() {
    static MAPS: OutboxSpec<std::collections::HashMap<(u8, u8), u8>> =
        OutboxSpec::json("maps").destination("maps");
    let mut buf = buffer();
    let payload = [((1, 2), 3)].into_iter().collect();
    assert!(matches!(
        buf.stage(&MAPS, "t", &payload),
        Err(StageError::Codec(_))
    ));
}

#[test]
fn duplicate_event_ids_fail_at_take() {
    let mut buf = buffer();
    let id = Uuid::now_v7();
    buf.stage(&SPEC, "t", &1).unwrap().event_id(id);
    buf.stage(&SPEC, "t", &2).unwrap().event_id(id);
    assert!(matches!(buf.take(), Err(StageError::DuplicateEventId(d)) if d == id));
}

#[test]
fn hlc_ordering_stamps_events() {
    static HLC: OutboxSpec<u32> = OutboxSpec::json("e").destination("q").hlc_ordering();
    let mut buf = buffer();
    buf.stage(&HLC, "t", &1).unwrap();
    buf.stage(&HLC, "t", &2).unwrap();
    buf.stage(&SPEC, "t", &3).unwrap();
    let staged = buf.take().unwrap();
    assert!(staged[0].envelope.hlc.unwrap() < staged[1].envelope.hlc.unwrap());
    assert_eq!(staged[2].envelope.hlc, None);
}

#[test]
fn a_cause_stamps_later_events_unless_they_set_their_own() {
    let mut placed = Envelope::new("o", "q", "order.placed", "1".into(), "application/json");
    let mut buf = buffer();
    buf.stage(&SPEC, "before", &1).unwrap();
    buf.caused_by(&placed);
    buf.stage(&SPEC, "inherits", &2).unwrap();
    buf.stage(&SPEC, "own", &3)
        .unwrap()
        .correlation_id("c")
        .causation_id("k");
    placed.correlation_id = Some("flow".into());
    buf.stage(&SPEC, "one", &4).unwrap().caused_by(&placed);
    buf.set_cause(None);
    buf.stage(&SPEC, "after", &5).unwrap();
    let ids: Vec<_> = buf
        .take()
        .unwrap()
        .into_iter()
        .map(|e| (e.envelope.correlation_id, e.envelope.causation_id))
        .collect();
    let id = Some(placed.event_id.to_string());
    assert_eq!(
        ids,
        [
            (None, None),
            (id.clone(), id.clone()),
            (Some("c".into()), Some("k".into())),
            (Some("flow".into()), id),
            (None, None),
        ]
    );
}

#[test]
fn a_cause_outlives_a_flush() {
    let placed = Envelope::new("o", "q", "order.placed", "1".into(), "application/json");
    let mut buf = buffer();
    buf.caused_by(&placed);
    buf.stage(&SPEC, "t", &1).unwrap();
    buf.take().unwrap();
    let staged = buf.stage(&SPEC, "t", &2).unwrap();
    assert_eq!(
        staged.envelope().causation_id,
        Some(placed.event_id.to_string())
    );
}

#[test]
fn not_before_and_delay_replace_each_other() {
    let at = SystemTime::now() + Duration::from_secs(60);
    let mut buf = buffer();
    buf.stage(&SPEC, "t", &1)
        .unwrap()
        .delay(Duration::from_secs(5))
        .not_before(at);
    buf.stage(&SPEC, "t", &2)
        .unwrap()
        .not_before(at)
        .delay(Duration::from_secs(5));
    let staged = buf.take().unwrap();
    assert_eq!(staged[0].delay, Some(Delay::Until(at)));
    assert_eq!(staged[1].delay, Some(Delay::For(Duration::from_secs(5))));
}

#[test]
fn an_event_expiring_before_it_may_be_relayed_is_refused_at_take() {
    let at = SystemTime::now() + Duration::from_secs(60);
    let mut buf = buffer();
    buf.stage(&SPEC, "t", &1)
        .unwrap()
        .not_before(at)
        .expires_at(at);
    let refused = buf.take().unwrap_err();
    assert!(matches!(refused, StageError::ExpiresBeforeRelay { .. }));
    assert!(
        refused.to_string().contains("could never be delivered"),
        "{refused}"
    );
    assert_eq!(buf.len(), 1, "the buffer is left as it was");

    let mut buf = buffer();
    buf.stage(&SPEC, "t", &1)
        .unwrap()
        .delay(Duration::from_secs(30))
        .expires_in(Duration::from_secs(10));
    assert!(matches!(
        buf.take(),
        Err(StageError::ExpiresBeforeRelay { .. })
    ));

    let mut buf = buffer();
    buf.stage(&SPEC, "t", &1)
        .unwrap()
        .delay(Duration::from_secs(10))
        .expires_in(Duration::from_secs(30));
    assert_eq!(buf.take().unwrap().len(), 1);
}
