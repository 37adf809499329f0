//! The interleaved pass of `append --mode durable`: weir and the mutex
//! baseline take turns in short phases, with the same writer threads.
//!
//! A virtual disk's fsync rate drifts a lot within a minute on a shared
//! host: in one run the baseline made 3.5k to 6.6k fsyncs/s at 64 writers
//! from one round to the next, and a speedup taken from runs seconds apart
//! moved with it, from 18 to 44. Phases of a quarter second in alternating
//! order put both cases in the same second many times over; the ratio
//! within each cycle cancels most of the drift. The median of those
//! per-cycle ratios is the figure, with its quartiles.
//!
//! Every append of either case is durable when it returns, so a phase
//! leaves nothing for the next one to pay for.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use weir_log::{Log, Options, Record, RecordType};

use super::record_parts;
use crate::mutexlog::MutexLog;

/// The phase values of the two cases.
const WEIR: usize = 0;
const MUTEX: usize = 1;
/// The phase value that tells the workers to stop the current phase.
const BETWEEN: usize = usize::MAX - 1;
/// The phase value that tells the workers to exit.
const DONE: usize = usize::MAX;

/// What the interleaved pass measured: the rate of each phase, one phase
/// of each case per cycle.
#[derive(Debug)]
pub(crate) struct Phases {
    pub(crate) weir: Vec<f64>,
    pub(crate) mutex: Vec<f64>,
}

impl Phases {
    /// weir's rate over the baseline's in the same cycle, per cycle.
    pub(crate) fn speedups(&self) -> Vec<f64> {
        self.weir
            .iter()
            .zip(&self.mutex)
            .map(|(w, m)| w / m)
            .collect()
    }
}

/// State the coordinator and the workers share.
struct Shared {
    phase: AtomicUsize,
    turn: Barrier,
    /// Records each worker appended in the phase that just ended.
    appends: Vec<AtomicU64>,
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

/// Runs `w` writers for about `secs` seconds of cycles of one `phase` per
/// case, with both logs in `dir` (a fresh directory on a disk).
pub(crate) fn run(
    dir: &Path,
    opts: &Options,
    w: usize,
    secs: f64,
    phase: Duration,
) -> Result<Phases> {
    let log = Log::open(dir.join("log"), opts.clone())?;
    let mlog = MutexLog::create(&dir.join("mutex.log"))?;
    let shared = Shared {
        phase: AtomicUsize::new(WEIR),
        turn: Barrier::new(w + 1),
        appends: (0..w).map(|_| AtomicU64::new(0)).collect(),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    let mut phases = Phases {
        weir: Vec::new(),
        mutex: Vec::new(),
    };
    let mut totals = [0u64; 2];
    let run = std::thread::scope(|s| -> Result<()> {
        for t in 0..w {
            let (shared, log, mlog) = (&shared, &log, &mlog);
            s.spawn(move || worker(t, shared, log, mlog));
        }
        let r = coordinate(&shared, secs, phase, &mut phases, &mut totals);
        shared.phase.store(DONE, Ordering::Release);
        shared.turn.wait();
        r
    });
    if let Some(e) = shared
        .error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    run?;
    // Every append of either case must be in its log exactly once.
    let st = log.stats();
    log.close()?;
    if st.durable_index != totals[WEIR] || mlog.records() != totals[MUTEX] {
        bail!(
            "interleaved: weir holds {} durable records of {}, mutex {} of {}",
            st.durable_index,
            totals[WEIR],
            mlog.records(),
            totals[MUTEX]
        );
    }
    Ok(phases)
}

/// The coordinator's side: starts and stops the phases, alternating which
/// case goes first in a cycle, and times each one.
fn coordinate(
    shared: &Shared,
    secs: f64,
    phase: Duration,
    phases: &mut Phases,
    totals: &mut [u64; 2],
) -> Result<()> {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut first = WEIR;
    while Instant::now() < end || phases.weir.is_empty() {
        for case in [first, 1 - first] {
            shared.phase.store(case, Ordering::Release);
            let t0 = Instant::now();
            shared.turn.wait();
            std::thread::sleep(phase);
            shared.phase.store(BETWEEN, Ordering::Release);
            // Every worker's last append is durable once it is back here.
            shared.turn.wait();
            let dt = t0.elapsed().as_secs_f64();
            if shared.failed.load(Ordering::Acquire) {
                return Err(anyhow!("a worker failed"));
            }
            let n: u64 = shared
                .appends
                .iter()
                .map(|a| a.load(Ordering::Acquire))
                .sum();
            totals[case] += n;
            let rate = n as f64 / dt;
            match case {
                WEIR => phases.weir.push(rate),
                _ => phases.mutex.push(rate),
            }
        }
        first = 1 - first;
    }
    Ok(())
}

/// One writer: in each phase, durable appends to that phase's log until
/// the phase ends. A worker that fails keeps passing the barriers, doing
/// nothing, so that the coordinator is never stuck.
fn worker(t: usize, shared: &Shared, log: &Log, mlog: &MutexLog) {
    let parts = record_parts(t).map_err(|e| shared.fail(e)).ok();
    let mut ok = parts.is_some();
    loop {
        shared.turn.wait();
        let p = shared.phase.load(Ordering::Acquire);
        if p == DONE {
            return;
        }
        let mut n = 0u64;
        if let Some((parent, name)) = parts.as_ref().filter(|_| ok) {
            let rec = Record::new(RecordType::CREAT).parent(parent).name(name);
            while shared.phase.load(Ordering::Relaxed) == p {
                let r = match p {
                    WEIR => log.append_durable(&rec).map(drop).map_err(Into::into),
                    _ => mlog.append(&rec, true),
                };
                if let Err(e) = r {
                    shared.fail(e);
                    ok = false;
                    break;
                }
                n += 1;
            }
        }
        shared.appends[t].store(n, Ordering::Release);
        shared.turn.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_cases_get_a_phase_per_cycle_and_every_append_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        // `run` itself fails if a log missed or doubled an append.
        let p = run(
            dir.path(),
            &Options::default(),
            4,
            0.2,
            Duration::from_millis(40),
        )
        .unwrap();
        assert!(!p.weir.is_empty());
        assert_eq!(p.weir.len(), p.mutex.len());
        assert!(p.weir.iter().sum::<f64>() > 0.0, "weir did no work");
        assert!(
            p.mutex.iter().sum::<f64>() > 0.0,
            "the baseline did no work"
        );
    }

    #[test]
    fn speedups_are_taken_within_each_cycle() {
        // The disk slows down by half in the second cycle: the ratio of the
        // same cycle stays put.
        let p = Phases {
            weir: vec![200.0, 100.0],
            mutex: vec![10.0, 5.0],
        };
        assert_eq!(p.speedups(), vec![20.0, 20.0]);
    }
}
