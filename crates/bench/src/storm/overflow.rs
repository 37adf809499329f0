//! Overflow: the real `weir mounts watch --backend fanotify` is stopped
//! (SIGSTOP) while more mounts are made than the fanotify queue holds, then
//! continued. The kernel drops events past the queue's limit and says so
//! with one overflow event; weir must resynchronise with a whole reading,
//! and its log must end up with exactly one ATTACH per new mount. Then every
//! mount is unmounted while it runs, and exactly one DETACH each must follow.
//!
//! The log is read from its directory, lock-free, as any other process
//! would. The child's memory before and at the peak gives weir's cost per
//! mount in a process that does nothing else.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::process::Signal;
use serde_json::{Map, Value, json};
use weir_log::{Reader, RecordType};
use weir_mounts::exact::{self, LogCheck, Tally};
use weir_mounts::{Backend, Mount};

use super::cpu;
use super::driver::{Loop, Workspace};
use super::watch_child::{Watch, find_weir};
use super::watchers::{WEIR_STILL, wait_still};
use crate::report::round;

/// How long the log may take to hold every record.
const COMPLETE_LIMIT: Duration = Duration::from_secs(60);
/// How long the child may take to read the table and mark its start.
const READY_LIMIT: Duration = Duration::from_secs(30);

/// What the overflow run found.
struct Overflow {
    mounts: usize,
    attach: LogCheck,
    detach: LogCheck,
    /// Records found by a whole-table comparison: the resynchronisation.
    compared: u64,
    /// From SIGCONT until the log held an ATTACH for every mount.
    resync_s: f64,
    /// From the first unmount until the log held a DETACH for every one.
    detach_s: f64,
    rss_kib_start: u64,
    rss_kib_peak: u64,
    cpu_attach_s: f64,
    cpu_detach_s: f64,
}

impl Overflow {
    fn exact(&self) -> bool {
        self.attach.ok() && self.detach.ok()
    }

    fn rss_bytes_per_mount(&self) -> f64 {
        (self.rss_kib_peak as f64 - self.rss_kib_start as f64) * 1024.0 / self.mounts as f64
    }
}

/// The fanotify queue's limit.
pub(crate) fn queue_limit() -> Result<u64> {
    let p = "/proc/sys/fs/fanotify/max_queued_events";
    std::fs::read_to_string(p)
        .with_context(|| format!("read {p}"))?
        .trim()
        .parse()
        .with_context(|| format!("parse {p}"))
}

/// Waits until the log holds a record for every one of `ids` of `kind`,
/// then until the child is idle, and counts what is there.
fn wait_complete(
    w: &mut Watch,
    reader: &mut Reader,
    tally: &mut Tally,
    kind: RecordType,
    ids: &BTreeSet<u64>,
    t0: Instant,
) -> Result<f64> {
    loop {
        tally.read(reader)?;
        // The cheap count first: this loop shares two CPUs with weir.
        if tally.distinct(kind) >= ids.len() && tally.covered(kind, ids) == ids.len() {
            break;
        }
        w.alive()?;
        if t0.elapsed() > COMPLETE_LIMIT {
            bail!(
                "after {} s the log has {} of {} {} records",
                COMPLETE_LIMIT.as_secs(),
                tally.covered(kind, ids),
                ids.len(),
                kind.name().unwrap_or("?")
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let done = t0.elapsed().as_secs_f64();
    // Duplicates would come after: wait until the tracker has nothing left
    // to do. Its thread alone: the CLI's main thread wakes every 100 ms to
    // look for signals, which costs about 0.5 ms of CPU a second.
    wait_still(|| cpu::named_threads_ns(w.id(), "weir-mounts"), WEIR_STILL)?;
    tally.read(reader)?;
    Ok(done)
}

/// Runs the overflow test with `n` mounts; the workspace must have as many
/// targets.
fn run(ws: &Workspace, weir: &Path, n: usize) -> Result<Overflow> {
    let state = ws.log_dir("overflow-state")?;
    let log_dir = state.join("log");
    let mut w = Watch::start(weir, &state)?;

    // Ready once the start's MARK is in the log: the fanotify group is
    // marked before the table is read, so every later mount is queued.
    let mut reader = Reader::open_dir(&log_dir, 1);
    let mut tally = Tally::default();
    let t = Instant::now();
    'ready: loop {
        w.alive()?;
        if log_dir.exists() {
            while let Some(r) = reader.next_record()? {
                tally.add(&r);
                if r.kind == RecordType::MARK && r.name == b"mount table read" {
                    break 'ready;
                }
            }
        }
        if t.elapsed() > READY_LIMIT {
            bail!(
                "weir mounts watch did not log its start within {} s",
                READY_LIMIT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Let it settle into poll(2) with its start-up allocations done.
    std::thread::sleep(Duration::from_millis(300));
    let rss_kib_start = cpu::rss_kib(Some(w.id()))?;
    let before = exact::kernel_ids(Backend::Fanotify)?;

    w.signal(Signal::STOP)?;
    let t = Instant::now();
    while !w.stopped()? {
        if t.elapsed() > Duration::from_secs(5) {
            bail!("weir mounts watch did not stop on SIGSTOP");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let made = ws.timed(|ws| ws.attach(Loop::Raw, n))?;
    let after = exact::kernel_ids(Backend::Fanotify)?;
    let new: BTreeSet<u64> = after.difference(&before).copied().collect();
    if new.len() != n {
        bail!("{n} mounts made but {} new ids in the table", new.len());
    }
    eprintln!("    {n} raw mounts made in {made:.2} s while weir was stopped; continuing it");

    let cpu0 = cpu::process_ns(w.id())?;
    let t0 = Instant::now();
    w.signal(Signal::CONT)?;
    let resync_s = wait_complete(
        &mut w,
        &mut reader,
        &mut tally,
        RecordType::MOUNT_ATTACH,
        &new,
        t0,
    )?;
    let compared = tally.compared;
    let rss_kib_peak = cpu::rss_kib(Some(w.id()))?;
    let cpu1 = cpu::process_ns(w.id())?;

    let t1 = Instant::now();
    ws.detach(Loop::Raw, n)?;
    let detach_s = wait_complete(
        &mut w,
        &mut reader,
        &mut tally,
        RecordType::MOUNT_DETACH,
        &new,
        t1,
    )?;
    let detach = tally.check(RecordType::MOUNT_DETACH, &new);
    // Checked last, so that a late duplicate counts too.
    let attach = tally.check(RecordType::MOUNT_ATTACH, &new);
    let cpu2 = cpu::process_ns(w.id())?;
    w.stop()?;
    std::fs::remove_dir_all(&state)?;
    Ok(Overflow {
        mounts: n,
        attach,
        detach,
        compared,
        resync_s,
        detach_s,
        rss_kib_start,
        rss_kib_peak,
        cpu_attach_s: cpu::secs(cpu1 - cpu0),
        cpu_detach_s: cpu::secs(cpu2 - cpu1),
    })
}

/// Runs the overflow test with `n` mounts (0: skipped), prints what it
/// found and returns the JSON keys. A failure is printed and added to
/// `failures`; a missing `weir` binary only skips the test.
pub(crate) fn report(
    ws: &Workspace,
    n: usize,
    queue: u64,
    failures: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let skipped = |why: String| {
        println!("  overflow: skipped: {why}");
        Map::from_iter([("overflow".to_owned(), json!(format!("skipped: {why}")))])
    };
    if n == 0 {
        return skipped("--overflow-mounts 0".into());
    }
    let bin = match find_weir() {
        Ok(b) => b,
        Err(why) => return skipped(why),
    };
    println!(
        "  overflow: `weir mounts watch --backend fanotify` stopped (SIGSTOP) while {n} raw mounts are made (queue limit {queue}), then continued"
    );
    eprintln!("  overflow, {n} mounts");
    let o = match run(ws, &bin, n) {
        Ok(o) => o,
        Err(e) => {
            let what = format!("overflow: {e:#}");
            println!("    FAILED: {what}");
            failures.push(what);
            ws.cleanup(n);
            out.insert("overflow".into(), json!(format!("failed: {e:#}")));
            out.insert("overflow_exact".into(), json!(false));
            return out;
        }
    };
    println!(
        "    after SIGCONT: {} in {:.2} s ({} records from whole-table comparisons), weir CPU {:.3} s",
        o.attach, o.resync_s, o.compared, o.cpu_attach_s
    );
    println!(
        "    unmounting all while it runs: {} in {:.2} s, weir CPU {:.3} s",
        o.detach, o.detach_s, o.cpu_detach_s
    );
    println!(
        "    memory: RSS {} KiB at start, {} KiB with {n} more mounts: {:.0} bytes per mount (target <= 1024; a Mount is {} bytes plus its strings)",
        o.rss_kib_start,
        o.rss_kib_peak,
        o.rss_bytes_per_mount(),
        std::mem::size_of::<Mount>()
    );
    if o.compared == 0 {
        println!("    NOTE: no record came from a comparison: the queue may not have overflowed");
    }
    if !o.exact() {
        failures.push(format!("overflow: {}; {}", o.attach, o.detach));
    }
    let v = json!({
        "overflow": "ran",
        "overflow_exact": o.exact(),
        "overflow_mounts": o.mounts,
        "overflow_queue_limit": queue,
        "overflow_compared_records": o.compared,
        "overflow_resync_s": round(o.resync_s, 3),
        "overflow_detach_s": round(o.detach_s, 3),
        "overflow_cpu_s": round(o.cpu_attach_s, 3),
        "overflow_detach_cpu_s": round(o.cpu_detach_s, 3),
        "rss_kib_at_start": o.rss_kib_start,
        "rss_kib_at_n": o.rss_kib_peak,
        "rss_bytes_per_mount": o.rss_bytes_per_mount().round(),
    });
    if let Value::Object(m) = v {
        out.extend(m);
    }
    out
}
