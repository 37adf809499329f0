//! CPU time and memory of the watchers: weir's threads in this process, or
//! a child process.
//!
//! weir's cost in a storm is every thread of this process except the one
//! driving the storm: the tracker's thread and the log's committer. That is
//! the process CPU clock minus the driver's thread clock. Both are the
//! scheduler's nanosecond runtime (what `/proc/<pid>/task/<tid>/schedstat`
//! shows), and unlike a sum over `/proc/self/task`, the process clock keeps
//! the time of threads that have exited (a tracker stopped mid-phase).
//! A child is read from `/proc/<pid>/task/*/schedstat`.

use anyhow::{Context, Result};
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

fn threads_ns(pid: u32, name: Option<&str>) -> Result<u64> {
    let dir = format!("/proc/{pid}/task");
    let mut sum = 0;
    for e in std::fs::read_dir(&dir).with_context(|| format!("read {dir}"))? {
        let task = e?.path();
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
        sum += text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .with_context(|| format!("parse {}: {text:?}", path.display()))?;
    }
    Ok(sum)
}

/// Resident set size in KiB (`VmRSS` of `/proc/<pid>/status`); `None` for
/// this process.
pub(crate) fn rss_kib(pid: Option<u32>) -> Result<u64> {
    let path = pid.map_or_else(
        || "/proc/self/status".to_owned(),
        |p| format!("/proc/{p}/status"),
    );
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {path}"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no VmRSS in {path}"))
}

/// Seconds from ns.
pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}
