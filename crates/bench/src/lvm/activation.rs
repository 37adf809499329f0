//! Event activation: the fleet's devices appear one by one under a running
//! `weir devices watch`, which must report the VG complete exactly once;
//! what that costs the watcher per event, early and late, and in memory.
//!
//! All devices are detached (the images kept), the watcher is started and
//! its `weir: watching block devices` line awaited, then the images are
//! attached one by one with `losetup --show -f`, which the kernel announces
//! with uevents as it would a disk. The watcher's CPU is read at four
//! checkpoints, each once it has printed `PV_FOUND` for every device
//! attached so far: ready, after the first window of attaches, before the
//! last window, and at the end (after `VG_COMPLETE` and all N `PV_FOUND`).

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::fleet::Fleet;
use super::stop::Stop;
use super::weir_cli;
use crate::storm::cpu;
use crate::storm::watch_child::Watch;

/// How long the watcher may take to start, or to catch up at a checkpoint.
const READY_LIMIT: Duration = Duration::from_secs(60);
const CATCH_UP_LIMIT: Duration = Duration::from_secs(60);
/// How long to keep listening after the end for a second `VG_COMPLETE`.
const LINGER: Duration = Duration::from_millis(500);
/// The prefix of the watcher's ready line on stderr.
const READY: &str = "weir: watching block devices";

/// What one activation measured.
#[derive(Debug)]
pub(crate) struct Activation {
    pub(crate) n: usize,
    /// Attaches per CPU window (100, or N/5 when N is smaller than 500).
    pub(crate) window: usize,
    /// The attach loop's wall time.
    pub(crate) attach_s: f64,
    /// The watcher's CPU from ready to the end.
    pub(crate) cpu_s: f64,
    /// Over the first and the last window of attaches.
    pub(crate) cpu_first_s: f64,
    pub(crate) cpu_last_s: f64,
    /// Whether every CPU figure came from the per-thread nanosecond
    /// counters (no thread exited between checkpoints), not 10 ms ticks.
    pub(crate) cpu_precise: bool,
    pub(crate) rss_hwm_kib: u64,
    pub(crate) vg_complete_count: usize,
    pub(crate) vg_incomplete_count: usize,
    /// From the last `losetup`'s return to the `VG_COMPLETE` line (negative:
    /// before it returned).
    pub(crate) vg_complete_delay_s: Option<f64>,
    pub(crate) pv_found: usize,
    pub(crate) pv_found_lines: usize,
    pub(crate) lines: usize,
}

/// The watcher's CPU at a checkpoint, both ways.
struct CpuMark {
    threads: BTreeMap<u32, u64>,
    stat_ns: u64,
}

impl CpuMark {
    fn read(pid: u32) -> Result<CpuMark> {
        Ok(CpuMark {
            threads: cpu::per_thread_ns(pid)?,
            stat_ns: cpu::stat_times(Some(pid))?.own_ns,
        })
    }

    /// Seconds since `earlier`, and whether precisely: the nanosecond
    /// counters of live threads lose the time of a thread that exited, so
    /// then the ticks of `/proc/<pid>/stat` are used.
    fn since(&self, earlier: &CpuMark) -> (f64, bool) {
        if earlier.threads.keys().all(|t| self.threads.contains_key(t)) {
            let sum = |m: &CpuMark| m.threads.values().sum::<u64>();
            (cpu::secs(sum(self).saturating_sub(sum(earlier))), true)
        } else {
            (
                cpu::secs(self.stat_ns.saturating_sub(earlier.stat_ns)),
                false,
            )
        }
    }
}

/// What the watcher printed so far, as counts.
struct Seen {
    rx: Receiver<(Instant, String)>,
    vg: String,
    ours: HashSet<String>,
    pv_found: HashSet<String>,
    pv_found_lines: usize,
    vg_complete: Vec<Instant>,
    vg_incomplete: usize,
    lines: usize,
}

/// The value of `key=` in a record line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
}

impl Seen {
    fn take(&mut self, at: Instant, line: &str) {
        self.lines += 1;
        let mut t = line.split_whitespace();
        match (t.next(), t.next()) {
            (Some("PV_FOUND"), _) => {
                if field(line, "vg") == Some(self.vg.as_str())
                    && let Some(u) = field(line, "uuid").filter(|u| self.ours.contains(*u))
                {
                    self.pv_found_lines += 1;
                    self.pv_found.insert(u.to_owned());
                }
            }
            (Some("VG_COMPLETE"), Some(vg)) if vg == self.vg => self.vg_complete.push(at),
            (Some("VG_INCOMPLETE"), Some(vg)) if vg == self.vg => self.vg_incomplete += 1,
            _ => {}
        }
    }

    /// Reads lines until `done` holds; fails if the watcher exits, stops
    /// printing, or takes over `limit`.
    fn wait(
        &mut self,
        w: &mut Watch,
        stop: &Stop,
        what: &str,
        limit: Duration,
        done: impl Fn(&Seen) -> bool,
    ) -> Result<()> {
        let t0 = Instant::now();
        while !done(self) {
            stop.check()?;
            match self.rx.recv_timeout(Duration::from_millis(50)) {
                Ok((at, line)) => self.take(at, &line),
                Err(RecvTimeoutError::Timeout) => w.alive()?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(closed(w, &format!("its stdout while waiting for {what}")));
                }
            }
            if t0.elapsed() > limit {
                bail!(
                    "weir devices watch: no {what} within {} s (PV_FOUND for {} of our PVs, {} VG_COMPLETE)",
                    limit.as_secs(),
                    self.pv_found.len(),
                    self.vg_complete.len()
                );
            }
        }
        Ok(())
    }

    /// Takes whatever has arrived, without waiting.
    fn drain(&mut self) {
        while let Ok((at, line)) = self.rx.try_recv() {
            self.take(at, &line);
        }
    }
}

/// The error for a watcher that closed a pipe (`what`): most likely it
/// exited, and its exit status says more once it is reaped.
fn closed(w: &mut Watch, what: &str) -> anyhow::Error {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        if let Err(e) = w.alive() {
            return e;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::anyhow!("weir devices watch closed {what}")
}

/// Starts `weir devices watch` and waits for its ready line.
fn start(weir: &Path, state: &Path, stop: &Stop) -> Result<(Watch, Receiver<(Instant, String)>)> {
    let mut cmd = weir_cli::cmd(weir, &[]);
    cmd.arg("--state-dir")
        .arg(state)
        .args(["devices", "watch"])
        .stdout(Stdio::piped());
    let (etx, erx) = mpsc::channel();
    let mut w = Watch::spawn(cmd, "weir devices watch", Some(etx))?;
    let out = w
        .take_stdout()
        .context("weir devices watch: no stdout pipe")?;
    let (tx, rx) = mpsc::channel();
    // Each line is stamped as it arrives, for the VG_COMPLETE delay.
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    let t0 = Instant::now();
    loop {
        stop.check()?;
        match erx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) if line.starts_with(READY) => return Ok((w, rx)),
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => w.alive()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(closed(&mut w, &format!("its stderr before `{READY}`")));
            }
        }
        if t0.elapsed() > READY_LIMIT {
            bail!(
                "weir devices watch did not print `{READY}` within {} s",
                READY_LIMIT.as_secs()
            );
        }
    }
}

/// Runs the activation over `fleet`, whose devices are all attached before
/// and after (also on error). A failure to stop the watcher cleanly goes to
/// `failures`.
pub(crate) fn run(
    fleet: &mut Fleet,
    weir: &Path,
    state: &Path,
    stop: &Stop,
    failures: &mut Vec<String>,
) -> Result<Activation> {
    let r = measure(fleet, weir, state, stop, failures);
    // The pvscan baseline and the teardown need every device back.
    let back = fleet.attach_rest();
    let a = r?;
    back?;
    Ok(a)
}

fn measure(
    fleet: &mut Fleet,
    weir: &Path,
    state: &Path,
    stop: &Stop,
    failures: &mut Vec<String>,
) -> Result<Activation> {
    let n = fleet.members();
    let window = (n / 5).clamp(1, 100);
    eprintln!("    detaching the {n} devices, starting weir devices watch");
    fleet.detach_all()?;
    let (mut w, rx) = start(weir, state, stop)?;
    let pid = w.id();
    let mut seen = Seen {
        rx,
        vg: fleet.vg_name().to_owned(),
        ours: fleet.pvids().iter().cloned().collect(),
        pv_found: HashSet::new(),
        pv_found_lines: 0,
        vg_complete: Vec::new(),
        vg_incomplete: 0,
        lines: 0,
    };
    seen.drain();
    let ready = CpuMark::read(pid)?;
    let mut early = None;
    let mut late = None;
    let t0 = Instant::now();
    for i in 1..=n {
        stop.check()?;
        fleet.attach_next()?;
        if i == window || i == n - window {
            seen.wait(
                &mut w,
                stop,
                &format!("PV_FOUND for {i} PVs"),
                CATCH_UP_LIMIT,
                |s| s.pv_found.len() >= i,
            )?;
            if i == window {
                early = Some(CpuMark::read(pid)?);
            }
            if i == n - window {
                late = Some(CpuMark::read(pid)?);
            }
        }
        if i % 250 == 0 {
            eprintln!("    attached {i} of {n}");
        }
    }
    let attached_at = Instant::now();
    seen.wait(
        &mut w,
        stop,
        "VG_COMPLETE and PV_FOUND for every PV",
        CATCH_UP_LIMIT,
        |s| !s.vg_complete.is_empty() && s.pv_found.len() >= n,
    )?;
    let end = CpuMark::read(pid)?;
    let rss_hwm_kib = cpu::hwm_kib(pid)?;
    std::thread::sleep(LINGER);
    seen.drain();
    if let Err(e) = w.stop() {
        failures.push(format!("activation: {e:#}"));
    }

    let early = early.context("no checkpoint after the first window")?;
    let late = late.context("no checkpoint before the last window")?;
    let (cpu_s, p0) = end.since(&ready);
    let (cpu_first_s, p1) = early.since(&ready);
    let (cpu_last_s, p2) = end.since(&late);
    let delay = seen
        .vg_complete
        .first()
        .map(|&c| match c.checked_duration_since(attached_at) {
            Some(d) => d.as_secs_f64(),
            None => -attached_at.duration_since(c).as_secs_f64(),
        });
    Ok(Activation {
        n,
        window,
        attach_s: attached_at.duration_since(t0).as_secs_f64(),
        cpu_s,
        cpu_first_s,
        cpu_last_s,
        cpu_precise: p0 && p1 && p2,
        rss_hwm_kib,
        vg_complete_count: seen.vg_complete.len(),
        vg_incomplete_count: seen.vg_incomplete,
        vg_complete_delay_s: delay,
        pv_found: seen.pv_found.len(),
        pv_found_lines: seen.pv_found_lines,
        lines: seen.lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen() -> Seen {
        let (_tx, rx) = mpsc::channel();
        Seen {
            rx,
            vg: "vg1".into(),
            ours: ["A-1".to_owned(), "B-2".to_owned()].into(),
            pv_found: HashSet::new(),
            pv_found_lines: 0,
            vg_complete: Vec::new(),
            vg_incomplete: 0,
            lines: 0,
        }
    }

    #[test]
    fn counts_only_our_pvs_in_our_vg() {
        let mut s = seen();
        let t = Instant::now();
        for l in [
            "DEVICE_ADD loop5 7:5 size=8388608",
            "PV_FOUND loop5 7:5 uuid=A-1 vg=vg1",
            "PV_FOUND loop6 7:6 uuid=C-3 vg=vg1",
            "PV_FOUND loop7 7:7 uuid=B-2 vg=vg10",
            "PV_FOUND loop5 7:5 uuid=A-1 vg=vg1",
            "VG_COMPLETE vg2 uuid=x seqno=1 pvs=2",
            "VG_INCOMPLETE vg1 uuid=x missing=1",
            "VG_COMPLETE vg1 uuid=x seqno=1 pvs=2",
        ] {
            s.take(t, l);
        }
        assert_eq!(s.pv_found.len(), 1);
        assert_eq!(s.pv_found_lines, 2);
        assert_eq!(s.vg_complete.len(), 1);
        assert_eq!(s.vg_incomplete, 1);
        assert_eq!(s.lines, 8);
    }

    #[test]
    fn field_matches_whole_keys() {
        let l = "PV_FOUND loop5 7:5 vguuid=X vg=vg1";
        assert_eq!(field(l, "vg"), Some("vg1"));
        assert_eq!(field(l, "uuid"), None);
    }

    #[test]
    fn cpu_falls_back_to_ticks_when_a_thread_exits() {
        let mark = |t: &[(u32, u64)], stat_ns| CpuMark {
            threads: t.iter().copied().collect(),
            stat_ns,
        };
        let a = mark(&[(1, 100), (2, 50)], 10_000_000);
        let same = mark(&[(1, 400), (2, 50), (3, 25)], 20_000_000);
        assert_eq!(same.since(&a), (cpu::secs(325), true));
        let exited = mark(&[(1, 400)], 30_000_000);
        assert_eq!(exited.since(&a), (cpu::secs(20_000_000), false));
    }
}
