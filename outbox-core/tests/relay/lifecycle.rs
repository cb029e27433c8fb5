//! The lifecycle plan: restarts, ordered shutdown, deadlines.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_core::Backoff;
use tidings_core::lifecycle::{LifecyclePlan, StepError, step_fn};
use tokio_util::sync::CancellationToken;

const QUICK: Backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(20));

/// Resolves once `runs` reaches `count`, or after 10 s: a fixed sleep
/// would be too short on a busy machine, where a panic's backtrace alone
/// can take longer to print.
async fn reached(runs: &AtomicU32, count: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while runs.load(Ordering::SeqCst) < count && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A restart beyond `count` would show up in this time.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Runs a plan of the one step `name`, restarted with backoff, whose run
/// `n` (counted from 1) first does `start(n)` and, if that returns, runs
/// until cancelled; checks the step ran exactly `runs` times.
async fn restarted<F>(name: &'static str, runs: u32, start: F)
where
    F: Fn(u32) -> Result<(), StepError> + Send + Sync + 'static,
{
    let started = Arc::new(AtomicU32::new(0));
    let (counter, start) = (started.clone(), Arc::new(start));
    let step = step_fn(move |cancel: CancellationToken| {
        let (run, start) = (counter.fetch_add(1, Ordering::SeqCst) + 1, start.clone());
        async move {
            start(run)?;
            cancel.cancelled().await;
            Ok(())
        }
    });
    let plan = LifecyclePlan::new().restart_backoff(QUICK).step(name, step);
    plan.run_until(reached(&started, runs)).await.unwrap();
    assert_eq!(started.load(Ordering::SeqCst), runs);
}

#[tokio::test]
async fn a_failing_step_is_restarted_with_backoff() {
    restarted("flaky", 3, |run| match run < 3 {
        true => Err(StepError::from(format!("run {run} failed"))),
        false => Ok(()),
    })
    .await;
}

#[tokio::test]
async fn a_panicking_step_is_restarted() {
    restarted("panicky", 2, |run| {
        assert!(run > 1, "first run panics");
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn steps_stop_in_reverse_order() {
    let stopped = Arc::new(Mutex::new(Vec::new()));
    let mut plan = LifecyclePlan::new();
    for name in ["relay", "sweeper", "consumer"] {
        let stopped = stopped.clone();
        plan = plan.step(
            name,
            step_fn(move |cancel: CancellationToken| {
                let stopped = stopped.clone();
                async move {
                    cancel.cancelled().await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    stopped.lock().unwrap().push(name);
                    Ok(())
                }
            }),
        );
    }
    plan.run_until(tokio::time::sleep(Duration::from_millis(50)))
        .await
        .unwrap();
    assert_eq!(*stopped.lock().unwrap(), ["consumer", "sweeper", "relay"]);
}

#[tokio::test]
async fn a_step_that_ignores_shutdown_is_reported_after_the_deadline() {
    let stubborn = step_fn(|_cancel: CancellationToken| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(())
    });
    let polite = step_fn(|cancel: CancellationToken| async move {
        cancel.cancelled().await;
        Ok(())
    });
    let plan = LifecyclePlan::new()
        .shutdown_timeout(Duration::from_millis(200))
        .step("stubborn", stubborn)
        .step("polite", polite);
    let started = tokio::time::Instant::now();
    let err = plan
        .run_until(tokio::time::sleep(Duration::from_millis(20)))
        .await
        .unwrap_err();
    assert_eq!(err.steps, ["stubborn"]);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_plan_whose_steps_all_finish_ends_on_its_own() {
    let plan = LifecyclePlan::new()
        .step(
            "one-shot",
            step_fn(|_cancel: CancellationToken| async { Ok(()) }),
        )
        .step(
            "another",
            step_fn(|_cancel: CancellationToken| async { Ok(()) }),
        );
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        plan.run_until(std::future::pending()),
    )
    .await;
    assert!(matches!(outcome, Ok(Ok(()))));
}
