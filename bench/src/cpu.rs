//! CPU time spent by the processes a scenario runs on: the bench itself,
//! PostgreSQL's and RabbitMQ's (and PgBouncer's), read from each thread's run time in
//! `/proc/<pid>/task/<tid>/schedstat` (nanoseconds on a CPU), so a side's
//! cost can be split between the client, the database and the broker.

use std::fs;
use std::ops::{AddAssign, Index, Sub};
use std::time::Duration;

/// The groups of processes whose run time a [`CpuTime`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// This process.
    Bench,
    /// Every process named `postgres` (the server and its backends).
    Postgres,
    /// The RabbitMQ node (`beam.smp`).
    Rabbitmq,
    /// Every process named `pgbouncer`, where a scenario goes through one.
    Pooler,
}

impl Group {
    /// How many groups there are.
    const COUNT: usize = 4;

    /// The group of another process named `comm`, if it counts.
    fn of(comm: &str) -> Option<Group> {
        match comm {
            "postgres" => Some(Group::Postgres),
            "beam.smp" => Some(Group::Rabbitmq),
            "pgbouncer" => Some(Group::Pooler),
            _ => None,
        }
    }
}

/// Run time by process group, at one moment or between two; read by
/// [`Group`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuTime([Duration; Group::COUNT]);

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
            let group = match pid == own {
                true => Group::Bench,
                false => {
                    let comm = fs::read_to_string(format!("/proc/{pid}/comm"));
                    match comm.ok().and_then(|comm| Group::of(comm.trim_end())) {
                        Some(group) => group,
                        None => continue,
                    }
                }
            };
            time.0[group as usize] += run_time(pid);
        }
        time
    }

    /// All groups together.
    pub(crate) fn total(&self) -> Duration {
        self.0.iter().sum()
    }
}

impl Index<Group> for CpuTime {
    type Output = Duration;

    fn index(&self, group: Group) -> &Duration {
        &self.0[group as usize]
    }
}

impl Sub for CpuTime {
    type Output = CpuTime;

    /// The time spent between two readings; a group whose processes ended
    /// meanwhile reads zero rather than negative.
    fn sub(self, earlier: CpuTime) -> CpuTime {
        CpuTime(std::array::from_fn(|n| {
            self.0[n].saturating_sub(earlier.0[n])
        }))
    }
}

impl AddAssign for CpuTime {
    fn add_assign(&mut self, other: CpuTime) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
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
        assert!(
            spent[Group::Bench] > Duration::ZERO,
            "spent {spent:?} ({x})"
        );
    }
}
