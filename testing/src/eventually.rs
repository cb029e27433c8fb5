//! Waiting for work done beside the code under test, such as a record a
//! store writes off the claim's path.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// How long [`eventually`] waits between probes.
const PROBE_EVERY: Duration = Duration::from_millis(50);

/// Calls `probe` until `done` holds for its answer or `within` has passed,
/// and returns the last answer, for the caller to assert on.
///
/// ```
/// use std::time::Duration;
/// use tidings_testing::eventually::eventually;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut calls = 0;
/// let seen = eventually(Duration::from_secs(1), || { calls += 1; async move { calls } }, |n| *n == 3).await;
/// assert_eq!(seen, 3);
/// # }
/// ```
pub async fn eventually<T, Fut>(
    within: Duration,
    mut probe: impl FnMut() -> Fut,
    done: impl Fn(&T) -> bool,
) -> T
where
    Fut: Future<Output = T>,
{
    let deadline = Instant::now() + within;
    loop {
        let answer = probe().await;
        if done(&answer) || Instant::now() >= deadline {
            return answer;
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}
