use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tidings_core::{Envelope, OrderingMode, OutboxSpec, Route};

use super::*;

fn event(route: &str, key: Option<&str>) -> Incoming {
    let mut envelope = Envelope::new(route, "orders", "placed", Bytes::new(), "text/plain");
    envelope.ordering_key = key.map(str::to_owned);
    Incoming {
        envelope,
        row: None,
        due: None,
        doomed: None,
    }
}

fn route(ordering: OrderingMode) -> Route {
    let mut route = OutboxSpec::<()>::json("r")
        .destination("orders")
        .route()
        .clone();
    route.ordering = ordering;
    route
}

fn seqs(claimed: &[Claimed]) -> Vec<u64> {
    claimed.iter().map(|c| c.seq).collect()
}

#[test]
fn the_position_moves_past_a_transaction_only_once_all_of_it_is_finished() {
    let mut window = Window::default();
    window.commit(vec![event("r", None), event("r", None)], 100);
    window.commit(vec![event("r", None)], 200);
    let g = window.generation();
    let claimed = window.claim(&route(OrderingMode::Unordered), 10);
    assert_eq!(seqs(&claimed), [0, 1, 2]);
    assert!(window.finish(g, 1));
    assert!(window.finish(g, 2));
    assert_eq!(window.advance(), None, "the first event is still in flight");
    assert!(window.finish(g, 0));
    assert_eq!(window.advance(), Some(200));
    assert_eq!(window.len(), 0);
    window.idle(250);
    assert_eq!(window.advance(), None);
    assert_eq!(window.confirmed(), 250);
}

#[test]
fn a_key_waits_behind_its_retried_event_on_a_per_key_route() {
    let mut window = Window::default();
    window.commit(
        vec![
            event("r", Some("a")),
            event("r", Some("a")),
            event("r", Some("b")),
        ],
        100,
    );
    let g = window.generation();
    let per_key = route(OrderingMode::PerKey);
    assert_eq!(seqs(&window.claim(&per_key, 10)), [0, 2]);
    assert!(window.retry(g, 0, Duration::ZERO, "broker down".into()));
    assert!(window.finish(g, 2));
    let again = window.claim(&per_key, 10);
    assert_eq!(
        seqs(&again),
        [0],
        "the retry comes first, its key's next waits"
    );
    assert_eq!(again[0].record.attempts_started, 2);
    assert_eq!(again[0].record.last_error.as_deref(), Some("broker down"));
    assert!(window.finish(g, 0));
    assert_eq!(seqs(&window.claim(&per_key, 10)), [1]);
}

#[test]
fn an_unordered_route_claims_past_a_waiting_retry() {
    let mut window = Window::default();
    window.commit(vec![event("r", Some("a")), event("r", Some("a"))], 100);
    let g = window.generation();
    let unordered = route(OrderingMode::Unordered);
    assert_eq!(seqs(&window.claim(&unordered, 1)), [0]);
    assert!(window.retry(g, 0, Duration::from_secs(60), "later".into()));
    assert_eq!(seqs(&window.claim(&unordered, 10)), [1]);
    assert!(window.next_due().is_some_and(|due| due > SystemTime::now()));
}

#[test]
fn claims_of_an_older_generation_settle_nothing() {
    let mut window = Window::default();
    window.commit(vec![event("r", None)], 100);
    let g = window.generation();
    window.claim(&route(OrderingMode::Unordered), 10);
    window.restart(50);
    assert!(!window.finish(g, 0));
    assert_eq!(window.len(), 0);
    assert_eq!(window.confirmed(), 50);
}

#[test]
fn doomed_and_delayed_events_are_never_claimed() {
    let mut window = Window::default();
    let mut doomed = event("r", None);
    doomed.doomed = Some("no relay serves route x".into());
    let mut delayed = event("r", None);
    delayed.due = Some(SystemTime::now() + Duration::from_secs(60));
    window.commit(vec![doomed, delayed, event("other", None)], 100);
    assert!(window.claim(&route(OrderingMode::Unordered), 10).is_empty());
    let g = window.generation();
    let taken = window.take_doomed();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].reason, "no relay serves route x");
    assert!(window.take_doomed().is_empty());
    window.restore_doomed(g, [taken[0].seq]);
    assert_eq!(window.take_doomed().len(), 1);
}

#[test]
fn counts_say_what_waits_and_what_is_in_flight_per_route() {
    let mut window = Window::default();
    window.commit(
        vec![event("r", None), event("r", None), event("other", None)],
        100,
    );
    window.claim(&route(OrderingMode::Unordered), 1);
    let (waiting, in_flight, oldest) = window.counts("r");
    assert_eq!((waiting, in_flight), (1, 1));
    assert!(oldest.is_some());
    assert_eq!(window.counts("other").0, 1);
    assert_eq!(window.counts("none"), (0, 0, None));
}
