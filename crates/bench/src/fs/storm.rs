//! The storm part: a million creates into a watched tree as fast as 4
//! threads make them, then weir stopped, then its log replayed and compared
//! with the live tree.
//!
//! The root is empty when weir starts (a replay needs a root the log
//! describes whole: `entries=0`), and every thread makes its directory
//! `tK` and, every 10,000 files, a directory `tK/dJ` for the next ones,
//! all after weir is ready: the log holds the whole tree. A storm this
//! size overflows the kernel's queue (16,384 events by default) unless the
//! reader keeps up; weir then writes a `fs events lost: tree compared`
//! MARK, walks the root and logs the difference. SIGTERM follows the last
//! create at once: weir's stop logs everything that came before it, so
//! the log must then replay into exactly the live tree (paths, kinds and
//! file handles; see `journal::Comparison`).
//!
//! weir's CPU is read twice: its threads' exact runtime at the end of the
//! creates, and its whole life's (from this process's children's times
//! once it is reaped, 10 ms ticks) minus what it had used before the
//! storm, which adds the catch-up and the stop.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::fs::{Mode, OFlags};
use serde_json::{Value, json};

use super::journal::{Comparison, LogCounts, Stopped, WeirRun};
use super::setup::{FsKind, Target, Workspace};
use super::watchers::Tools;
use crate::report::num;
use crate::storm::cpu;

/// Threads that create.
pub(crate) const THREADS: usize = 4;
/// Files per directory.
const PER_DIR: u64 = 10_000;
const READY_LIMIT: Duration = Duration::from_secs(60);
/// How long weir may take to stop after the storm: it logs the backlog and
/// any comparison first.
const STOP_LIMIT: Duration = Duration::from_secs(1800);
/// How long after the creates the copy's thread is given before its CPU
/// is read: longer than the checkpoint interval.
const INDEX_SETTLE: Duration = Duration::from_secs(6);

/// The part's figures on one filesystem.
#[derive(Debug, Clone)]
pub(crate) struct StormResult {
    pub(crate) fs: FsKind,
    pub(crate) files: u64,
    /// Seconds of creates, and weir's CPU in them (exact).
    pub(crate) creates_s: f64,
    pub(crate) cpu_creates_s: f64,
    /// weir's CPU from the storm's start to its exit (10 ms ticks).
    pub(crate) cpu_total_s: Option<f64>,
    /// weir's peak RSS at the end of the creates.
    pub(crate) hwm_kib: u64,
    pub(crate) stopped: Stopped,
    /// weir quit during the storm.
    pub(crate) quit: Option<String>,
    /// The CPU of weir's persistent-copy thread (`weir-fs-index`) once a
    /// checkpoint after the creates has had its time, before the stop.
    pub(crate) index_cpu_s: Option<f64>,
    pub(crate) counts: LogCounts,
    pub(crate) cmp: Comparison,
    /// weir's last stderr lines, when the replay differs.
    pub(crate) weir_said: Vec<String>,
}

/// Runs the part on `target`: `files` creates.
pub(crate) fn run(
    target: &Target,
    tools: &Tools,
    ws: &Workspace,
    files: u64,
) -> Result<StormResult> {
    let fs = target.kind;
    let root = target.part_dir("storm")?;
    let w = WeirRun::start(
        tools,
        ws,
        &root,
        &format!("storm-{}", fs.name()),
        READY_LIMIT,
    )?;
    let ticks0 = w.cpu_ticks_ns()?;
    let exact0 = w.cpu_ns()?;
    eprintln!(
        "  storm: {files} creates by {THREADS} threads on {}",
        fs.name()
    );
    let creates_s = creates(&root, files)?;
    let quit = w.exited();
    let (cpu_creates_s, hwm_kib) = if quit.is_none() {
        (cpu::secs(w.cpu_ns()?.saturating_sub(exact0)), w.hwm_kib()?)
    } else {
        (f64::NAN, 0)
    };
    // A checkpoint every 5 s: one after the creates has then run.
    let index_cpu_s = if quit.is_none() {
        std::thread::sleep(INDEX_SETTLE);
        Some(cpu::secs(cpu::named_threads_ns(w.pid(), "weir-fs-index")?))
    } else {
        None
    };
    eprintln!("  storm: {creates_s:.1} s of creates; stopping weir");
    let stopped = w.stop(STOP_LIMIT)?;
    let counts = LogCounts::read(&w.log_dir())?;
    eprintln!(
        "  storm: replaying {} records and walking the tree",
        counts.records
    );
    let cmp = Comparison::run(&w.log_dir(), &root)?;
    let weir_said = if cmp.equal {
        Vec::new()
    } else {
        w.stderr_tail(5)
    };
    w.remove_state()?;
    Ok(StormResult {
        fs,
        files,
        creates_s,
        cpu_creates_s,
        cpu_total_s: stopped
            .life_cpu_ns
            .map(|n| cpu::secs(n.saturating_sub(ticks0))),
        hwm_kib,
        stopped,
        quit,
        index_cpu_s,
        counts,
        cmp,
        weir_said,
    })
}

/// `files` creates (open O_CREAT|O_EXCL, close) by [`THREADS`] threads
/// started together, thread K in `root/tK/dJ`; the seconds from the start
/// to the last create.
fn creates(root: &Path, files: u64) -> Result<f64> {
    let start = Barrier::new(THREADS + 1);
    std::thread::scope(|s| -> Result<f64> {
        let workers: Vec<_> = (0..THREADS as u64)
            .map(|t| {
                let n = files / THREADS as u64 + u64::from(t < files % THREADS as u64);
                let start = &start;
                s.spawn(move || -> Result<()> {
                    let rootfd = rustix::fs::open(
                        root,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .with_context(|| format!("open {}", root.display()));
                    start.wait();
                    let rootfd = rootfd?;
                    let tdir = mkdir_open(&rootfd, &format!("t{t}"))?;
                    let mut dir = mkdir_open(&tdir, "d0")?;
                    for i in 0..n {
                        if i > 0 && i % PER_DIR == 0 {
                            dir = mkdir_open(&tdir, &format!("d{}", i / PER_DIR))?;
                        }
                        let name = CString::new(format!("f{i}"))?;
                        drop(
                            rustix::fs::openat(
                                &dir,
                                name.as_c_str(),
                                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                                Mode::from_raw_mode(0o644),
                            )
                            .with_context(|| format!("create t{t}/.../f{i}"))?,
                        );
                    }
                    Ok(())
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a storm thread panicked"))??;
        }
        Ok(t.elapsed().as_secs_f64())
    })
}

fn mkdir_open(at: &OwnedFd, name: &str) -> Result<OwnedFd> {
    rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o755))
        .with_context(|| format!("mkdir {name}"))?;
    rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("open {name}"))
}

impl StormResult {
    /// The entries the storm made: its files, the thread directories and
    /// theirs.
    fn expected_entries(&self) -> u64 {
        let per = |t: u64| self.files / THREADS as u64 + u64::from(t < self.files % THREADS as u64);
        (0..THREADS as u64)
            .map(|t| 1 + per(t) + per(t).div_ceil(PER_DIR).max(1))
            .sum()
    }

    /// weir stayed up, exited 0 and its log replays into the live tree.
    fn index_us_per_record(&self) -> Option<f64> {
        Some(self.index_cpu_s? * 1e6 / self.counts.records.max(1) as f64)
    }

    fn ok(&self) -> bool {
        self.quit.is_none() && self.stopped.problem.is_none() && self.cmp.equal
    }

    pub(crate) fn print(&self) {
        println!();
        println!(
            "  storm on {}: {} creates by {THREADS} threads in {:.2} s ({:.0}/s), then SIGTERM",
            self.fs.name(),
            self.files,
            self.creates_s,
            self.files as f64 / self.creates_s
        );
        println!(
            "    weir: CPU {:.2} s in the creates, {} from their start to its exit; peak RSS {:.1} MiB; stopped {:.2} s after SIGTERM (wall {:.2} s from the first create){}{}",
            self.cpu_creates_s,
            self.cpu_total_s.map_or("?".into(), |s| format!("{s:.2} s")),
            self.hwm_kib as f64 / 1024.0,
            self.stopped.stop_s,
            self.creates_s + self.stopped.stop_s,
            self.quit
                .as_ref()
                .map_or(String::new(), |q| format!("; QUIT during the storm: {q}")),
            self.stopped
                .problem
                .as_ref()
                .map_or(String::new(), |p| format!("; {p}"))
        );
        let c = &self.counts;
        if let Some(s) = self.index_cpu_s {
            println!(
                "    the persistent copy's thread: CPU {s:.3} s, {:.2} us per record logged (target <= 1 us amortized)",
                self.index_us_per_record().unwrap_or(f64::NAN)
            );
        }
        println!(
            "    log: {} records ({} CREAT, {} MKDIR, {} flagged COMPARE), {} overflows (MARKs \"fs events lost: tree compared\")",
            c.records, c.creat, c.mkdir, c.compared, c.lost
        );
        println!(
            "    replay == live tree: {} [{} entries expected; replay {:.2} s, walk {:.2} s]",
            self.cmp.text(),
            self.expected_entries(),
            self.cmp.replay_s,
            self.cmp.walk_s
        );
        for l in &self.weir_said {
            println!("    weir said: {l}");
        }
    }

    /// Prints the part's PASS/FAIL line; the JSON of it.
    pub(crate) fn targets(&self) -> Value {
        let ok = self.ok();
        println!(
            "    {}: on {}, weir's log replays into exactly the live tree after the storm and its stop: {}",
            if ok { "PASS" } else { "FAIL" },
            self.fs.name(),
            self.cmp.equal
        );
        json!({"replay_equals_live": self.cmp.equal, "ok": ok})
    }

    pub(crate) fn json(&self, targets: Value) -> Value {
        json!({
            "fs": self.fs.name(),
            "files": self.files,
            "threads": THREADS,
            "creates_s": num(self.creates_s, 3),
            "creates_per_s": num(self.files as f64 / self.creates_s, 0),
            "weir_cpu_creates_s": num(self.cpu_creates_s, 3),
            "weir_cpu_total_s": self.cpu_total_s.map(|s| crate::report::round(s, 2)),
            "weir_hwm_mib": num(self.hwm_kib as f64 / 1024.0, 1),
            "index_cpu_s": self.index_cpu_s.map(|s| num(s, 3)),
            "index_us_per_record": self.index_us_per_record().map(|u| num(u, 3)),
            "stop_s": num(self.stopped.stop_s, 3),
            "wall_s": num(self.creates_s + self.stopped.stop_s, 3),
            "quit": self.quit,
            "problem": self.stopped.problem,
            "log": self.counts.json(),
            "overflows": self.counts.lost,
            "expected_entries": self.expected_entries(),
            "replay": self.cmp.json(),
            "replay_equals_live": self.cmp.equal,
            "weir_said": self.weir_said,
            "targets": targets,
        })
    }
}
