//! CPU time and memory of the watchers: weir's threads in this process, or
//! a child process.
//!
//! weir's cost in a storm is every thread of this process except the one
//! driving the storm: the tracker's thread and the log's committer. That is
//! the process CPU clock minus the driver's thread clock. Both are the
//! scheduler's nanosecond runtime (what `/proc/<pid>/task/<tid>/schedstat`
//! shows), and unlike a sum over `/proc/self/task`, the process clock keeps
//! the time of threads that have exited (a tracker stopped mid-phase).
//! A child is read from `/proc/<pid>/task/*/schedstat`; `/proc/<pid>/stat`
//! gives coarser totals that keep exited threads, and this process's
//! waited-for children (`lvm` bills its `lvm pvscan` children so).

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use rustix::time::ClockId;

use crate::timed::clock_ns;

/// CPU ns of every thread of this process but the calling one (the driver).
pub(crate) fn others_ns() -> u64 {
    // Thread first: the process clock read after it covers at least as much.
    let mine = clock_ns(ClockId::ThreadCPUTime);
    clock_ns(ClockId::ProcessCPUTime).saturating_sub(mine)
}

/// CPU ns of every thread of process `pid`, from schedstat (precise, unlike
/// the tick counts of `/proc/<pid>/stat`).
pub(crate) fn process_ns(pid: u32) -> Result<u64> {
    threads_ns(pid, None)
}

/// CPU ns of the threads of process `pid` named `name` (their `comm`).
pub(crate) fn named_threads_ns(pid: u32, name: &str) -> Result<u64> {
    threads_ns(pid, Some(name))
}

/// CPU ns of each live thread of process `pid`, by thread id. Comparing
/// two readings shows whether a thread exited in between, taking its time
/// out of the sum.
pub(crate) fn per_thread_ns(pid: u32) -> Result<BTreeMap<u32, u64>> {
    threads(pid, None)
}

fn threads_ns(pid: u32, name: Option<&str>) -> Result<u64> {
    Ok(threads(pid, name)?.values().sum())
}

fn threads(pid: u32, name: Option<&str>) -> Result<BTreeMap<u32, u64>> {
    let dir = format!("/proc/{pid}/task");
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(&dir).with_context(|| format!("read {dir}"))? {
        let task = e?.path();
        let Some(tid) = task
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(name) = name {
            let comm = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
        }
        let path = task.join("schedstat");
        // A thread that exits between the listing and the read is skipped.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let ns = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .with_context(|| format!("parse {}: {text:?}", path.display()))?;
        out.insert(tid, ns);
    }
    Ok(out)
}

/// The unit of the times in `/proc/<pid>/stat`: USER_HZ, 100 on every
/// architecture but alpha (rustix's `param` feature, which would ask, is not
/// enabled here).
const USER_HZ: u64 = 100;

/// CPU totals from `/proc/<pid>/stat` (`None`: this process), in ns but
/// counted in ticks of 10 ms.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StatTimes {
    /// utime + stime: every thread, those that exited included.
    pub(crate) own_ns: u64,
    /// cutime + cstime: the children waited for so far.
    pub(crate) children_ns: u64,
}

/// Reads [`StatTimes`] of process `pid`, or of this process for `None`.
pub(crate) fn stat_times(pid: Option<u32>) -> Result<StatTimes> {
    let path = pid.map_or_else(
        || "/proc/self/stat".to_owned(),
        |p| format!("/proc/{p}/stat"),
    );
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    // The command name may hold spaces and parentheses; fields are counted
    // after its last ')', where field 3 (the state) comes first.
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .with_context(|| format!("no ')' in {path}"))?;
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11) // to field 14, utime
        .take(4)
        .map_while(|v| v.parse().ok())
        .collect();
    let [ut, st, cut, cst] = f[..] else {
        bail!("{path}: no utime, stime, cutime and cstime in {text:?}");
    };
    let ns = |ticks: u64| ticks.saturating_mul(1_000_000_000 / USER_HZ);
    Ok(StatTimes {
        own_ns: ns(ut + st),
        children_ns: ns(cut + cst),
    })
}

/// Resident set size in KiB (`VmRSS` of `/proc/<pid>/status`); `None` for
/// this process.
pub(crate) fn rss_kib(pid: Option<u32>) -> Result<u64> {
    status_kib(pid, "VmRSS")
}

/// Peak resident set size in KiB (`VmHWM` of `/proc/<pid>/status`).
pub(crate) fn hwm_kib(pid: u32) -> Result<u64> {
    status_kib(Some(pid), "VmHWM")
}

fn status_kib(pid: Option<u32>, key: &str) -> Result<u64> {
    let path = pid.map_or_else(
        || "/proc/self/status".to_owned(),
        |p| format!("/proc/{p}/status"),
    );
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {key} in {path}"))
}

/// Seconds from ns.
pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}
