//! A property of headers over PostgreSQL → RabbitMQ → consumer with the
//! PostgreSQL inbox: any header an event is staged with is either refused
//! at staging with a typed error, or reaches the handler byte for byte. No
//! header parks its event, fails at publish, or fails a neighbour.
//!
//! `TIDINGS_HEADER_EVENTS` sets the events per run (300 by default) and
//! `PROPTEST_CASES` the runs (1 by default).

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use support::postgres_rabbitmq::{Order, World, apply, options, run_until};
use tidings_consumer::{Consumer, HandlerError, TxHandle, handler_fn};
use tidings_core::relay::Relay;
use tidings_core::{Headers, Message, OutboxSpec, OutboxStore, RetryPolicy, StageError, reserved};
use tidings_postgres::{CommitError, PgContext};
use tidings_rabbitmq::QueueKind;

/// Every reserved name and prefix, for the generator to pick from.
fn reserved_bases() -> Vec<&'static str> {
    reserved::ALL
        .iter()
        .flat_map(|list| list.names.iter().chain(list.prefixes))
        .copied()
        .collect()
}

/// A reserved name or prefix (with a tail) in mixed case.
fn reserved_name() -> impl Strategy<Value = String> {
    let bases = reserved_bases();
    (0..bases.len(), "[a-z0-9-]{0,6}", any::<u64>()).prop_map(move |(i, tail, cases)| {
        let base = bases[i];
        let name = match base.ends_with('-') {
            true => format!("{base}{tail}"),
            false => base.to_owned(),
        };
        name.chars()
            .enumerate()
            .map(|(n, c)| match cases >> (n % 64) & 1 {
                1 => c.to_ascii_uppercase(),
                _ => c,
            })
            .collect()
    })
}

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z][a-z0-9_.-]{0,20}",
        3 => reserved_name(),
        2 => "[ -~]{0,24}",
        1 => any::<String>(),
        1 => "[a-z]{120,140}",
    ]
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[ -~]{0,40}",
        3 => "\\PC{0,40}",
        1 => any::<String>(),
        1 => Just(String::new()),
        1 => (8_000usize..8_400).prop_map(|n| "v".repeat(n)),
    ]
}

fn headers() -> impl Strategy<Value = Headers> {
    prop::collection::btree_map(header_name(), header_value(), 0..4)
}

#[test]
fn headers_arrive_unchanged_or_are_refused_at_staging() {
    let events = std::env::var("TIDINGS_HEADER_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let config = Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1),
        max_shrink_iters: 8,
        failure_persistence: None,
        ..Config::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let strategy = prop::collection::vec(headers(), events);
    TestRunner::new(config)
        .run(&strategy, |cases| {
            runtime.block_on(check(cases));
            Ok(())
        })
        .unwrap();
}

/// Stages each case in its own transaction, relays them all, consumes
/// them all, and compares what the handler saw with what was staged.
async fn check(cases: Vec<Headers>) {
    let world = World::new(QueueKind::Quorum).await;
    let spec: &'static OutboxSpec<Order> = Box::leak(Box::new(
        OutboxSpec::json("order-events")
            .destination(world.queue.name())
            .retry(RetryPolicy::new().max_attempts(3)),
    ));
    let (total, mut refused) = (cases.len(), 0);
    let mut expected = HashMap::new();
    for (id, headers) in (0..).zip(cases) {
        let mut ctx = world.store.begin().await.unwrap();
        let mut staged = ctx.outbox().stage(spec, "t", &Order { id }).unwrap();
        for (name, value) in &headers {
            staged = staged.header(name.clone(), value.clone());
        }
        match ctx.commit().await {
            Ok(()) => {
                expected.insert(id, headers);
            }
            Err(CommitError::Stage(
                StageError::ReservedHeader { .. }
                | StageError::Header { .. }
                | StageError::Headers { .. },
            )) => refused += 1,
            Err(other) => panic!("staging {headers:?} failed untyped: {other:?}"),
        }
    }

    if total >= 100 {
        let with_headers = expected.values().filter(|h| !h.is_empty()).count();
        assert!(
            refused > 0 && with_headers > 0,
            "the cases cover too little"
        );
    }

    let relay = Relay::new(world.store.clone(), world.publisher.clone(), spec).unwrap();
    let published = relay.drain().await.unwrap();
    let stats = world.store.stats(spec.name()).await.unwrap();
    assert_eq!(
        (published.published, published.failed, stats.pending),
        (expected.len(), 0, 0),
        "every staged event is published at once"
    );

    let seen: Arc<Mutex<HashMap<u32, Vec<Headers>>>> = Arc::default();
    let sql = Arc::new(world.effect_sql());
    let handler = handler_fn({
        let seen = seen.clone();
        move |msg: Message<Order>, tx: TxHandle<PgContext<'static>>| {
            let (seen, sql) = (seen.clone(), sql.clone());
            async move {
                apply(&sql, &msg, &tx).await?;
                let mut seen = seen
                    .lock()
                    .map_err(|_| HandlerError::transient("poisoned"))?;
                let calls = seen.entry(msg.payload.id).or_default();
                calls.push(msg.envelope.headers.clone());
                Ok(())
            }
        }
    });
    let consumer = Consumer::new(world.source.clone(), world.queue, handler)
        .unwrap()
        .inbox(world.inbox())
        .options(options().max_deliveries(5));
    let wanted = expected.len() as u64;
    let report = run_until(consumer, |r| async move { r.processed >= wanted }).await;
    assert_eq!((report.processed, report.parked), (wanted, 0), "{report:?}");
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    for (id, headers) in &expected {
        let calls = seen.get(id).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(calls, std::slice::from_ref(headers), "event {id}");
    }
    world.drop().await;
}
