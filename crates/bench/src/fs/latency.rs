//! The latency part: at rest, single creates 50 ms apart, and for each
//! the time from the create's return until its `CREAT` record can be read
//! from the log by another process.
//!
//! weir watches a fresh, empty root; after it is ready and has been left
//! alone for 200 ms, each create is `openat(O_CREAT|O_EXCL|O_WRONLY)` of a
//! new name in the root, timed from that call's return (the close follows
//! at once), and a `weir_log::Reader` on the log's directory (as any
//! consumer reads it: no lock, the frames written so far) is polled every
//! 100 µs until the `CREAT` of that name is there. Its `Reader::wait`
//! sleeps up to 50 ms on a directory, far too coarse for this. The
//! record's own time (weir's append, wall clock) gives the part of the
//! delay that is weir's before the append; the rest is until the record is
//! readable. Target: p99 within 10 ms.

use std::ffi::CString;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use rustix::fs::{Mode, OFlags};
use serde_json::{Value, json};
use weir_log::{Reader, RecordType};

use super::journal::{Stopped, WeirRun};
use super::setup::{FsKind, Target, Workspace};
use super::watchers::Tools;
use crate::report::{num, quantile};

/// Between creates.
pub(crate) const INTERVAL: Duration = Duration::from_millis(50);
/// How often the log is looked at.
const POLL: Duration = Duration::from_micros(100);
/// A record not readable after this is counted missing.
const GIVE_UP: Duration = Duration::from_secs(2);
/// Left alone after its start, before the first create.
const REST: Duration = Duration::from_millis(200);
const READY_LIMIT: Duration = Duration::from_secs(60);
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// The target for p99, ms.
const P99_TARGET_MS: f64 = 10.0;

/// The part's figures on one filesystem.
#[derive(Debug, Clone)]
pub(crate) struct LatencyResult {
    pub(crate) fs: FsKind,
    pub(crate) creates: usize,
    /// Per create found: ms until readable, and until weir's append (the
    /// record's time).
    pub(crate) readable_ms: Vec<f64>,
    pub(crate) appended_ms: Vec<f64>,
    /// Creates whose record was not readable within [`GIVE_UP`].
    pub(crate) missing: usize,
    pub(crate) stopped: Stopped,
}

fn wall_ns() -> i128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Runs the part on `target`: `creates` creates [`INTERVAL`] apart.
pub(crate) fn run(
    target: &Target,
    tools: &Tools,
    ws: &Workspace,
    creates: usize,
) -> Result<LatencyResult> {
    let fs = target.kind;
    let root = target.part_dir("latency")?;
    let w = WeirRun::start(
        tools,
        ws,
        &root,
        &format!("latency-{}", fs.name()),
        READY_LIMIT,
    )?;
    std::thread::sleep(REST);
    eprintln!(
        "  latency: {creates} creates {} ms apart on {}",
        INTERVAL.as_millis(),
        fs.name()
    );
    let mut reader = Reader::open_dir(w.log_dir(), 1);
    let rootfd = rustix::fs::open(
        &root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("open {}", root.display()))?;
    let mut readable_ms = Vec::with_capacity(creates);
    let mut appended_ms = Vec::with_capacity(creates);
    let mut missing = 0;
    let mut next = Instant::now();
    for i in 0..creates {
        if let Some(e) = w.exited() {
            anyhow::bail!("weir exited during the latency part: {e}");
        }
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next = Instant::now() + INTERVAL;
        let name = format!("l{i}");
        let cname = CString::new(name.as_bytes())?;
        let fd = rustix::fs::openat(
            &rootfd,
            cname.as_c_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .with_context(|| format!("create {name}"))?;
        let t = Instant::now();
        let wall = wall_ns();
        drop(fd);
        let found = loop {
            let mut hit = None;
            while let Some(r) = reader.next_record().context("read weir's log")? {
                if r.kind == RecordType::CREAT && r.name == name.as_bytes() {
                    hit = Some(r.time_ns);
                    break;
                }
            }
            if let Some(time_ns) = hit {
                break Some((t.elapsed(), time_ns));
            }
            if t.elapsed() > GIVE_UP {
                break None;
            }
            std::thread::sleep(POLL);
        };
        match found {
            Some((d, time_ns)) => {
                readable_ms.push(d.as_secs_f64() * 1e3);
                appended_ms.push((i128::from(time_ns) - wall) as f64 / 1e6);
            }
            None => missing += 1,
        }
    }
    let stopped = w.stop(STOP_LIMIT)?;
    w.remove_state()?;
    Ok(LatencyResult {
        fs,
        creates,
        readable_ms,
        appended_ms,
        missing,
        stopped,
    })
}

impl LatencyResult {
    fn q(v: &[f64], q: f64) -> f64 {
        quantile(v, q)
    }

    fn max(v: &[f64]) -> f64 {
        v.iter().copied().fold(f64::NAN, f64::max)
    }

    /// p99 of the time until readable, a missing record counting as
    /// infinitely late.
    fn p99(&self) -> f64 {
        let mut v = self.readable_ms.clone();
        v.extend(std::iter::repeat_n(f64::INFINITY, self.missing));
        quantile(&v, 0.99)
    }

    pub(crate) fn print(&self) {
        let r = &self.readable_ms;
        let a = &self.appended_ms;
        println!();
        println!(
            "  latency on {}: {} single creates {} ms apart, at rest; create's return -> CREAT readable in the log",
            self.fs.name(),
            self.creates,
            INTERVAL.as_millis()
        );
        println!(
            "    readable: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; weir's append (the record's time): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms{}{}",
            Self::q(r, 0.5),
            Self::q(r, 0.99),
            Self::max(r),
            Self::q(a, 0.5),
            Self::q(a, 0.99),
            Self::max(a),
            if self.missing > 0 {
                format!(
                    "; {} records not readable within {} s",
                    self.missing,
                    GIVE_UP.as_secs()
                )
            } else {
                String::new()
            },
            self.stopped
                .problem
                .as_ref()
                .map_or(String::new(), |p| format!("; weir {p}"))
        );
    }

    /// Prints the part's PASS/FAIL line; the JSON of it.
    pub(crate) fn targets(&self) -> Value {
        let p99 = self.p99();
        let ok = p99.is_finite().then_some(p99 <= P99_TARGET_MS);
        match ok {
            Some(ok) => println!(
                "    {}: on {}, create to readable record p99 <= 10 ms: {p99:.2} ms",
                if ok { "PASS" } else { "FAIL" },
                self.fs.name()
            ),
            None => println!(
                "    FAIL: on {}, create to readable record p99 <= 10 ms: {} records missing",
                self.fs.name(),
                self.missing
            ),
        }
        json!({"p99_ms": num(p99, 3), "p99_ok": ok.unwrap_or(false)})
    }

    pub(crate) fn json(&self, targets: Value) -> Value {
        let r = &self.readable_ms;
        let a = &self.appended_ms;
        json!({
            "fs": self.fs.name(),
            "creates": self.creates,
            "interval_ms": INTERVAL.as_millis() as u64,
            "readable_ms": {"p50": num(Self::q(r, 0.5), 3), "p99": num(Self::q(r, 0.99), 3), "max": num(Self::max(r), 3)},
            "appended_ms": {"p50": num(Self::q(a, 0.5), 3), "p99": num(Self::q(a, 0.99), 3), "max": num(Self::max(a), 3)},
            "missing": self.missing,
            "problem": self.stopped.problem,
            "targets": targets,
        })
    }
}
