//! Child processes to kill, pause and restart on a schedule.

use std::future::Future;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// A child process the test owns, signalled by its PID.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    pid: Pid,
}

impl ChildProcess {
    /// Starts `command`; the child dies with this handle if it is dropped.
    ///
    /// # Errors
    ///
    /// The program could not be started.
    pub fn spawn(mut command: Command) -> io::Result<Self> {
        let child = command.kill_on_drop(true).spawn()?;
        let id = child
            .id()
            .ok_or_else(|| io::Error::other("the child exited at once"))?;
        let pid = Pid::from_raw(i32::try_from(id).map_err(io::Error::other)?);
        Ok(Self { child, pid })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.pid.as_raw().unsigned_abs()
    }

    /// Kills it at once (SIGKILL), as the out-of-memory killer or a lost
    /// machine would, and reaps it.
    ///
    /// # Errors
    ///
    /// The child could not be signalled or reaped.
    pub async fn kill(&mut self) -> io::Result<()> {
        self.child.kill().await
    }

    /// Freezes it (SIGSTOP): its connections stay open and nothing answers.
    ///
    /// # Errors
    ///
    /// The signal could not be sent.
    pub fn pause(&self) -> io::Result<()> {
        self.signal(Signal::SIGSTOP)
    }

    /// Lets a paused child run again (SIGCONT).
    ///
    /// # Errors
    ///
    /// The signal could not be sent.
    pub fn resume(&self) -> io::Result<()> {
        self.signal(Signal::SIGCONT)
    }

    /// Asks it to stop (SIGTERM) and waits up to `grace` for it to exit,
    /// then kills it.
    ///
    /// # Errors
    ///
    /// The child could not be signalled or reaped.
    pub async fn stop(&mut self, grace: Duration) -> io::Result<()> {
        if self.child.try_wait()?.is_some() {
            return Ok(());
        }
        self.terminate()?;
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(exited) => exited.map(drop),
            Err(_) => self.kill().await,
        }
    }

    /// Asks it to stop (SIGTERM), as a service manager would, without
    /// waiting; [`wait`](Self::wait) for its exit.
    ///
    /// # Errors
    ///
    /// The signal could not be sent.
    pub fn terminate(&self) -> io::Result<()> {
        self.signal(Signal::SIGTERM)
    }

    /// Waits for it to exit; its exit status.
    ///
    /// # Errors
    ///
    /// The child could not be reaped.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Its standard output line by line, once, where the command piped it.
    pub fn lines(&mut self) -> Option<Lines<BufReader<ChildStdout>>> {
        Some(BufReader::new(self.child.stdout.take()?).lines())
    }

    /// Whether it has exited (and reaps it if so).
    ///
    /// # Errors
    ///
    /// Its status could not be read.
    pub fn has_exited(&mut self) -> io::Result<bool> {
        Ok(self.child.try_wait()?.is_some())
    }

    fn signal(&self, signal: Signal) -> io::Result<()> {
        kill(self.pid, signal).map_err(io::Error::from)
    }
}

/// When to kill: after a run of a random length between two bounds,
/// drawn from a seeded generator so a failing schedule can be replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KillSchedule {
    shortest: Duration,
    longest: Duration,
    seed: u64,
}

impl KillSchedule {
    /// Runs of `shortest` to `longest` (swapped if given the wrong way
    /// round), seed 0.
    pub fn new(shortest: Duration, longest: Duration) -> Self {
        Self {
            shortest: shortest.min(longest),
            longest: longest.max(shortest),
            seed: 0,
        }
    }

    /// Draws the run lengths from `seed`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    fn runs(self) -> impl Iterator<Item = Duration> {
        let mut rng = fastrand::Rng::with_seed(self.seed);
        let span = (self.longest - self.shortest).as_millis() as u64;
        std::iter::repeat_with(move || self.shortest + Duration::from_millis(rng.u64(0..=span)))
    }
}

/// What a [`Killer`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KillReport {
    /// Children started.
    pub starts: u32,
    /// Children killed with SIGKILL.
    pub kills: u32,
    /// Children that exited on their own before their kill was due.
    pub exits: u32,
}

/// Runs a child made by a command factory, kills it when each run of the
/// schedule ends and starts a new one, until told to stop; then stops the
/// last child gracefully (SIGTERM, then SIGKILL after 10 s).
pub struct Killer<F> {
    command: F,
    schedule: KillSchedule,
}

impl<F: FnMut() -> Command> Killer<F> {
    /// A killer of the children `command` makes.
    pub fn new(command: F, schedule: KillSchedule) -> Self {
        Self { command, schedule }
    }

    /// Kills and restarts children for `duration`.
    ///
    /// # Errors
    ///
    /// A child could not be started or signalled.
    pub async fn run_for(self, duration: Duration) -> io::Result<KillReport> {
        self.run_until(tokio::time::sleep(duration)).await
    }

    /// Kills and restarts children until `done` completes.
    ///
    /// # Errors
    ///
    /// A child could not be started or signalled.
    pub async fn run_until(mut self, done: impl Future<Output = ()>) -> io::Result<KillReport> {
        let mut report = KillReport::default();
        let mut runs = self.schedule.runs();
        let mut child = self.start(&mut report)?;
        tokio::pin!(done);
        loop {
            let run = runs.next().unwrap_or_default();
            tokio::select! {
                () = &mut done => break,
                () = tokio::time::sleep(run) => {
                    if child.has_exited()? {
                        report.exits += 1;
                    } else {
                        child.kill().await?;
                        report.kills += 1;
                    }
                    child = self.start(&mut report)?;
                }
            }
        }
        child.stop(Duration::from_secs(10)).await?;
        Ok(report)
    }

    fn start(&mut self, report: &mut KillReport) -> io::Result<ChildProcess> {
        report.starts += 1;
        ChildProcess::spawn((self.command)())
    }
}
