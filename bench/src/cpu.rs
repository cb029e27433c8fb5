//! CPU time spent by the processes a scenario runs on: the bench itself,
//! PostgreSQL's and RabbitMQ's (and PgBouncer's), read from each thread's run time in
//! `/proc/<pid>/task/<tid>/schedstat` (nanoseconds on a CPU), so a side's
//! cost can be split between the client, the database and the broker.

use std::fs;
use std::ops::{AddAssign, Sub};
use std::time::Duration;

/// Run time by process group, at one moment or between two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuTime {
    /// This process.
    pub(crate) bench: Duration,
    /// Every process named `postgres` (the server and its backends).
    pub(crate) postgres: Duration,
    /// The RabbitMQ node (`beam.smp`).
    pub(crate) rabbitmq: Duration,
    /// Every process named `pgbouncer`, where a scenario goes through one.
    pub(crate) pooler: Duration,
}

impl CpuTime {
    /// The run time of every thread of each group so far. Processes that
    /// cannot be read (gone meanwhile, or not ours to read) count nothing.
    pub(crate) fn now() -> Self {
        let own = std::process::id();
        let mut time = CpuTime::default();
        let Ok(entries) = fs::read_dir("/proc") else {
            return time;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let group = if pid == own {
                &mut time.bench
            } else {
                let comm = fs::read_to_string(format!("/proc/{pid}/comm"));
                match comm.as_deref().map(str::trim_end) {
                    Ok("postgres") => &mut time.postgres,
                    Ok("beam.smp") => &mut time.rabbitmq,
                    Ok("pgbouncer") => &mut time.pooler,
                    _ => continue,
                }
            };
            *group += run_time(pid);
        }
        time
    }

    /// All groups together.
    pub(crate) fn total(&self) -> Duration {
        self.bench + self.postgres + self.rabbitmq + self.pooler
    }
}

impl Sub for CpuTime {
    type Output = CpuTime;

    /// The time spent between two readings; a group whose processes ended
    /// meanwhile reads zero rather than negative.
    fn sub(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            bench: self.bench.saturating_sub(earlier.bench),
            postgres: self.postgres.saturating_sub(earlier.postgres),
            rabbitmq: self.rabbitmq.saturating_sub(earlier.rabbitmq),
            pooler: self.pooler.saturating_sub(earlier.pooler),
        }
    }
}

impl AddAssign for CpuTime {
    fn add_assign(&mut self, other: CpuTime) {
        self.bench += other.bench;
        self.postgres += other.postgres;
        self.rabbitmq += other.rabbitmq;
        self.pooler += other.pooler;
    }
}

/// Waits until process `pid` has ended, for at most `limit`: a process
/// that ends while a side is measured takes its run time out of its
/// group's total, so a scenario lets the process serving one side end
/// before it measures the next. Returns whether it ended.
pub(crate) async fn process_ended(pid: u32, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while fs::metadata(format!("/proc/{pid}")).is_ok() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// The summed run time of a process's threads.
fn run_time(pid: u32) -> Duration {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    let nanos: u64 = tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_run_time_grows_with_work() {
        let before = CpuTime::now();
        let mut x = 0_u64;
        for i in 0..20_000_000_u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let spent = CpuTime::now() - before;
        assert!(spent.bench > Duration::ZERO, "spent {spent:?} ({x})");
    }
}
