//! Test binaries that are their own harness (`harness = false`) and their
//! own child processes: run plainly, the binary is the parent test; run
//! with an environment variable set, it is a child the parent started, to
//! be read, killed and stopped as a service would be.
//!
//! ```no_run
//! use tidings_testing::faults::harnessless;
//!
//! const CHILD_ENV: &str = "MY_CRASH_CHILD";
//!
//! fn main() {
//!     harnessless::run(CHILD_ENV, "a_killed_consumer_loses_nothing", child, parent);
//! }
//!
//! async fn parent() -> String {
//!     let mut child = harnessless::spawn_self(CHILD_ENV, "orders").unwrap();
//!     let mut lines = child.lines().unwrap();
//!     assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("ready"));
//!     child.kill().await.unwrap();
//!     "1 kill".into()
//! }
//!
//! async fn child(queue: String) {
//!     let stop = harnessless::until_terminated();
//!     harnessless::tell_parent("ready");
//!     stop.cancelled().await;
//! #   drop(queue);
//! }
//! ```

use std::future::Future;
use std::io::{self, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, join_all};
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::ChildProcess;

/// Runs `child` with the value of `child_env` when it is set; otherwise
/// runs `test`, named `name`, and prints its line with the figures it
/// returns and how long it took, as the test harness would.
pub fn run<C, T>(
    child_env: &str,
    name: &str,
    child: impl FnOnce(String) -> C,
    test: impl FnOnce() -> T,
) where
    C: Future<Output = ()>,
    T: Future<Output = String>,
{
    let runtime = runtime();
    match std::env::var(child_env) {
        Ok(config) => runtime.block_on(child(config)),
        Err(_) => {
            runtime.block_on(timed(name, test()));
            passed(1);
        }
    }
}

/// A test of a binary that is its own harness: its name, and the parent's
/// side, which returns the figures to print.
pub type Test = (&'static str, fn() -> BoxFuture<'static, String>);

/// As [`run`], for a binary with several tests: runs `child` with the
/// value of `child_env` when it is set; otherwise runs `tests` side by
/// side (each has children, queues and tables of its own), printing each
/// one's line as it ends. A child tells which test started it by what its
/// parent put in its config.
pub fn run_each<C>(child_env: &str, child: impl FnOnce(String) -> C, tests: &[Test])
where
    C: Future<Output = ()>,
{
    let runtime = runtime();
    match std::env::var(child_env) {
        Ok(config) => runtime.block_on(child(config)),
        Err(_) => {
            let runs = tests.iter().map(|(name, test)| timed(name, test()));
            runtime.block_on(join_all(runs));
            passed(tests.len());
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the test")
}

/// Runs `test` and prints its line, with its figures and how long it took.
async fn timed(name: &str, test: impl Future<Output = String>) {
    let started = Instant::now();
    let figures = test.await;
    let seconds = started.elapsed().as_secs_f64();
    let _ = writeln!(
        io::stderr().lock(),
        "test {name} ... ok ({figures}, {seconds:.1} s)"
    );
}

fn passed(count: usize) {
    let _ = writeln!(io::stderr().lock(), "{count} passed, 0 failed");
}

/// Starts this binary again as a child, with `child_env` set to `config`
/// and its standard output piped for [`ChildProcess::lines`].
///
/// # Errors
///
/// The binary could not be found or started.
pub fn spawn_self(child_env: &str, config: &str) -> io::Result<ChildProcess> {
    let mut command = Command::new(std::env::current_exe()?);
    command
        .env(child_env, config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    ChildProcess::spawn(command)
}

/// Runs children of this binary (`child_env` set to `config`) one after
/// another, killing each `kill_after` once it says `reached` on its
/// standard output, as the out-of-memory killer would, and starting the
/// next, until `drained` says the work is done; then stops the last child
/// with SIGTERM and returns how many were killed. `drained` answers
/// whether the work is done and, for a failure, what it sees.
///
/// # Panics
///
/// When the work is not done within `within`, a child exits on its own,
/// or the last child does not stop cleanly within 30 s of SIGTERM.
pub async fn kill_each_time_reached<F, Fut>(
    child_env: &str,
    config: &str,
    reached: &str,
    kill_after: Duration,
    within: Duration,
    mut drained: F,
) -> u32
where
    F: FnMut() -> Fut,
    Fut: Future<Output = (bool, String)>,
{
    let deadline = Instant::now() + within;
    let mut kills = 0;
    loop {
        let mut child = spawn_self(child_env, config).expect("the child starts");
        let mut lines = child.lines().expect("the child's output is piped");
        loop {
            let line = tokio::select! {
                line = lines.next_line() => line.expect("the child's output reads"),
                () = tokio::time::sleep(Duration::from_millis(100)) => {
                    let (done, seen) = drained().await;
                    assert!(
                        done || Instant::now() < deadline,
                        "not done after {kills} kills in {within:?}: {seen}"
                    );
                    if !done {
                        continue;
                    }
                    child.terminate().expect("SIGTERM reaches the child");
                    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
                        .await
                        .expect("the child stops on SIGTERM")
                        .expect("the child is reaped");
                    assert!(status.success(), "the last child stopped with {status}");
                    return kills;
                }
            };
            match line.as_deref() {
                Some(line) if line == reached => {
                    tokio::time::sleep(kill_after).await;
                    child.kill().await.expect("the child is killed");
                    kills += 1;
                    break;
                }
                Some(_) => {}
                None => panic!("the child exited on its own: {:?}", child.wait().await),
            }
        }
    }
}

/// In a child: a token cancelled when the parent asks it to stop
/// ([`ChildProcess::terminate`] or [`ChildProcess::stop`]), as a service
/// stops on SIGTERM.
///
/// # Panics
///
/// When the handler for SIGTERM cannot be installed.
pub fn until_terminated() -> CancellationToken {
    let cancel = CancellationToken::new();
    let mut terminate = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            terminate.recv().await;
            cancel.cancel();
        }
    });
    cancel
}

/// In a child: tells the parent `line` on standard output, at once.
///
/// # Panics
///
/// When standard output is closed.
pub fn tell_parent(line: &str) {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}").expect("the parent reads the child's output");
    out.flush().expect("the parent reads the child's output");
}
