//! The interleaved pass of `changelog-overhead`: the three cases take turns
//! in short phases inside one process, with the same threads and
//! directories.
//!
//! Runs of a few seconds each, as in the rounds, see the host drift between
//! them; on this kind of shared VM one case can run 3–5% faster than the
//! same case a minute later. Phases of 100 ms in rotating order put every
//! case in the same minute many times over, and the ratio taken within each
//! cycle (one phase of each case) cancels most of the drift. The median of
//! those per-cycle ratios is the figure; its quartiles show the spread.
//!
//! Each weir phase ends with `Log::sync`, inside its timing: the commit of
//! what the phase appended is weir's cost and must not slip into the next
//! phase. The mutex log writes each record when it is appended, so it has
//! nothing left over. Before each phase a file is written and deleted (see
//! `freemem`), so every case allocates warm memory.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use weir_log::{Log, Options};

use super::{Case, Load, Sink};
use crate::freemem;
use crate::mutexlog::MutexLog;

/// The phase value that tells the workers to stop the current phase.
const BETWEEN: usize = usize::MAX;
/// The phase value that tells the workers to exit.
const DONE: usize = usize::MAX - 1;

/// Memory written and deleted before each phase: many times what one
/// phase's log allocates (about 3 MiB at half a million records per second,
/// in steps of a whole 8 MiB segment). With 16 MiB, weir's phases still
/// paid 1–2% for pages the host had to fault back in: the ratio rose by
/// that much when the log rewrote the same pages instead of fresh ones.
/// With 64 MiB that difference was gone.
const WARM_BYTES: u64 = 64 << 20;

/// What the interleaved pass measured at one thread count.
pub(crate) struct Phases {
    /// Per case (in [`Case::ALL`] order), the rate of each of its phases,
    /// one per cycle.
    pub(crate) rates: [Vec<f64>; 3],
}

impl Phases {
    /// `case`'s rate over the no-changelog rate of the same cycle, per cycle.
    pub(crate) fn paired(&self, case: usize) -> Vec<f64> {
        self.rates[case]
            .iter()
            .zip(&self.rates[0])
            .map(|(c, none)| c / none)
            .collect()
    }
}

/// State the coordinator and the workers share.
struct Shared {
    phase: AtomicUsize,
    turn: Barrier,
    /// Operations each worker did in the phase that just ended.
    ops: Vec<AtomicU64>,
    failed: AtomicBool,
    error: Mutex<Option<anyhow::Error>>,
}

impl Shared {
    fn fail(&self, e: anyhow::Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.failed.store(true, Ordering::Release);
    }
}

/// Runs `n` threads for about `secs` seconds of cycles of `phase` per case,
/// with the logs under `root` (a fresh directory).
pub(crate) fn run(
    root: &Path,
    opts: &Options,
    n: usize,
    secs: f64,
    phase: Duration,
) -> Result<Phases> {
    let dirs: Vec<_> = (0..n).map(|t| root.join(format!("t{t}"))).collect();
    for d in &dirs {
        std::fs::create_dir(d)?;
    }
    let log = Log::open(root.join("log"), opts.clone())?;
    let mlog = MutexLog::create(&root.join("mutex.log"))?;
    let sinks = [Sink::None, Sink::Weir(&log), Sink::Mutex(&mlog)];
    let shared = Shared {
        phase: AtomicUsize::new(BETWEEN),
        turn: Barrier::new(n + 1),
        ops: (0..n).map(|_| AtomicU64::new(0)).collect(),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    let mut rates: [Vec<f64>; 3] = Default::default();
    let mut totals = [0u64; 3];
    let run = std::thread::scope(|s| -> Result<()> {
        for (t, dir) in dirs.iter().enumerate() {
            let (shared, sinks) = (&shared, &sinks);
            s.spawn(move || worker(dir, t, shared, sinks));
        }
        let r = coordinate(root, &log, &shared, secs, phase, &mut rates, &mut totals);
        shared.phase.store(DONE, Ordering::Release);
        shared.turn.wait();
        r
    });
    // A worker's own error says more than the coordinator's "a worker
    // failed".
    if let Some(e) = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    run?;
    // Every operation of a weir or mutex phase must have been recorded
    // exactly once.
    log.sync()?;
    let st = log.stats();
    log.close()?;
    if st.last_index != totals[1] || mlog.records() != totals[2] {
        bail!(
            "interleaved: weir recorded {} of {} operations, mutex {} of {}",
            st.last_index,
            totals[1],
            mlog.records(),
            totals[2]
        );
    }
    Ok(Phases { rates })
}

/// The coordinator's side: starts and stops the phases, in cycles whose
/// order rotates, and times each one.
fn coordinate(
    root: &Path,
    log: &Log,
    shared: &Shared,
    secs: f64,
    phase: Duration,
    rates: &mut [Vec<f64>; 3],
    totals: &mut [u64; 3],
) -> Result<()> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut first = 0;
    while Instant::now() < end || rates[0].is_empty() {
        for j in 0..Case::ALL.len() {
            let ci = (first + j) % Case::ALL.len();
            freemem::warm(root, WARM_BYTES)?;
            shared.phase.store(ci, Ordering::Release);
            let t0 = Instant::now();
            shared.turn.wait();
            std::thread::sleep(phase);
            shared.phase.store(BETWEEN, Ordering::Release);
            shared.turn.wait();
            if Case::ALL[ci] == Case::Weir {
                log.sync()?;
            }
            let dt = t0.elapsed().as_secs_f64();
            if shared.failed.load(Ordering::Acquire) {
                return Err(anyhow!("a worker failed"));
            }
            let ops: u64 = shared.ops.iter().map(|o| o.load(Ordering::Acquire)).sum();
            totals[ci] += ops;
            rates[ci].push(ops as f64 / dt);
        }
        first = (first + 1) % Case::ALL.len();
    }
    Ok(())
}

/// One thread: in each phase, the load of that phase's case until the
/// phase ends. A worker that fails keeps passing the barriers, doing
/// nothing, so that the coordinator is never stuck.
fn worker(dir: &Path, t: usize, shared: &Shared, sinks: &[Sink<'_>; 3]) {
    let mut load = Load::open(dir, t).map_err(|e| shared.fail(e)).ok();
    loop {
        shared.turn.wait();
        let p = shared.phase.load(Ordering::Acquire);
        if p == DONE {
            return;
        }
        let mut ops = 0u64;
        let mut failed = false;
        if let Some(l) = load.as_mut().filter(|_| p < sinks.len()) {
            while shared.phase.load(Ordering::Relaxed) == p {
                if let Err(e) = l.step(&sinks[p]) {
                    shared.fail(e);
                    failed = true;
                    break;
                }
                ops += 2;
            }
        }
        if failed {
            load = None;
        }
        shared.ops[t].store(ops, Ordering::Release);
        shared.turn.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_gets_a_phase_per_cycle_and_every_operation_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        // `run` itself fails if a log missed or doubled an operation.
        let p = run(
            dir.path(),
            &Options::default(),
            2,
            0.2,
            Duration::from_millis(50),
        )
        .unwrap();
        let cycles = p.rates[0].len();
        assert!(cycles >= 1);
        for r in &p.rates {
            assert_eq!(r.len(), cycles);
            // Not every phase: a loaded machine may not run the workers
            // within one phase.
            assert!(r.iter().sum::<f64>() > 0.0, "a case did no work: {r:?}");
        }
    }

    #[test]
    fn paired_ratios_are_taken_within_each_cycle() {
        // The host slows down by half in the second cycle: the ratios of
        // the same cycle stay put, where a ratio of overall medians would not.
        let p = Phases {
            rates: [vec![100.0, 50.0], vec![95.0, 47.5], vec![70.0, 36.0]],
        };
        assert_eq!(p.paired(1), vec![0.95, 0.95]);
        assert_eq!(p.paired(2), vec![0.7, 0.72]);
    }
}
