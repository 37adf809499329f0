//! Cases that take turns in short phases with the same worker threads: the
//! driver of the interleaved passes of `changelog-overhead` and `append`.
//!
//! On a shared VM a case can run much faster or slower than the same case
//! a minute later. Phases of a fraction of a second in rotating order put
//! every case in the same second many times over, so a ratio taken within
//! one cycle (one phase of each case) cancels most of that drift.
//!
//! A coordinator starts each phase, sleeps for its length, and stops it;
//! the workers meet it at a barrier on both ends, so a phase's time covers
//! every worker's last operation. A worker that fails keeps passing the
//! barriers, doing nothing, so that the coordinator is never stuck.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};

use crate::timed;

/// The phase value that tells the workers to stop the current phase.
const BETWEEN: usize = usize::MAX - 1;
/// The phase value that tells the workers to exit.
const DONE: usize = usize::MAX;

/// How a pass runs: its cases, its workers, and what happens around each
/// phase.
pub(crate) struct Pass {
    /// How many cases take turns (numbered from 0).
    pub(crate) cases: usize,
    /// How many worker threads run each phase.
    pub(crate) workers: usize,
    /// About how long the cycles run in all; at least one runs.
    pub(crate) secs: f64,
    /// The length of one phase.
    pub(crate) phase: Duration,
}

/// What a pass measured.
pub(crate) struct Measured {
    /// Per case, the rate (operations per second) of each of its phases,
    /// one per cycle.
    pub(crate) rates: Vec<Vec<f64>>,
    /// Per case, the process's CPU time (every thread of it) in each of
    /// its phases, in seconds, one per cycle: with the rates, the CPU per
    /// operation and how busy the CPUs were.
    pub(crate) cpu_s: Vec<Vec<f64>>,
    /// Per case, the length of each of its phases in seconds.
    pub(crate) secs: Vec<Vec<f64>>,
    /// Per case, the operations of all its phases.
    pub(crate) totals: Vec<u64>,
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

impl Pass {
    /// Runs the pass. Each worker `t` makes its state with `setup(t)`, then
    /// in each phase calls `step(state, case)`, which returns the
    /// operations it did, until the phase ends. `before(case)` runs before
    /// a phase starts, outside its time; `after(case)` once every worker is
    /// back, inside it.
    pub(crate) fn run<S>(
        &self,
        setup: impl Fn(usize) -> Result<S> + Sync,
        step: impl Fn(&mut S, usize) -> Result<u64> + Sync,
        mut before: impl FnMut(usize) -> Result<()>,
        mut after: impl FnMut(usize) -> Result<()>,
    ) -> Result<Measured> {
        let shared = Shared {
            phase: AtomicUsize::new(BETWEEN),
            turn: Barrier::new(self.workers + 1),
            ops: (0..self.workers).map(|_| AtomicU64::new(0)).collect(),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
        };
        let mut m = Measured {
            rates: vec![Vec::new(); self.cases],
            cpu_s: vec![Vec::new(); self.cases],
            secs: vec![Vec::new(); self.cases],
            totals: vec![0; self.cases],
        };
        let run = std::thread::scope(|s| -> Result<()> {
            for t in 0..self.workers {
                let (shared, setup, step) = (&shared, &setup, &step);
                s.spawn(move || worker(t, shared, setup, step));
            }
            let r = self.coordinate(&shared, &mut before, &mut after, &mut m);
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
        Ok(m)
    }

    /// The coordinator's side: starts and stops the phases, in cycles whose
    /// order rotates, and times each one.
    fn coordinate(
        &self,
        shared: &Shared,
        before: &mut impl FnMut(usize) -> Result<()>,
        after: &mut impl FnMut(usize) -> Result<()>,
        m: &mut Measured,
    ) -> Result<()> {
        let end = Instant::now() + Duration::from_secs_f64(self.secs);
        let mut first = 0;
        while Instant::now() < end || m.rates[0].is_empty() {
            for j in 0..self.cases {
                let case = (first + j) % self.cases;
                before(case)?;
                shared.phase.store(case, Ordering::Release);
                let t0 = Instant::now();
                let cpu0 = timed::process_cpu_s();
                shared.turn.wait();
                std::thread::sleep(self.phase);
                shared.phase.store(BETWEEN, Ordering::Release);
                shared.turn.wait();
                after(case)?;
                let cpu = timed::process_cpu_s() - cpu0;
                let dt = t0.elapsed().as_secs_f64();
                if shared.failed.load(Ordering::Acquire) {
                    return Err(anyhow!("a worker failed"));
                }
                let ops: u64 = shared.ops.iter().map(|o| o.load(Ordering::Acquire)).sum();
                m.totals[case] += ops;
                m.rates[case].push(ops as f64 / dt);
                m.cpu_s[case].push(cpu);
                m.secs[case].push(dt);
            }
            first = (first + 1) % self.cases;
        }
        Ok(())
    }
}

/// One worker: in each phase, `step` for that phase's case until the phase
/// ends.
fn worker<S>(
    t: usize,
    shared: &Shared,
    setup: &impl Fn(usize) -> Result<S>,
    step: &impl Fn(&mut S, usize) -> Result<u64>,
) {
    let mut state = setup(t).map_err(|e| shared.fail(e)).ok();
    loop {
        shared.turn.wait();
        let p = shared.phase.load(Ordering::Acquire);
        if p == DONE {
            return;
        }
        let mut ops = 0u64;
        let mut failed = false;
        // A worker that passes the barrier late may find the phase already
        // over: it then has nothing to do until the next barrier.
        if let Some(s) = state.as_mut().filter(|_| p != BETWEEN) {
            while shared.phase.load(Ordering::Relaxed) == p {
                match step(s, p) {
                    Ok(n) => ops += n,
                    Err(e) => {
                        shared.fail(e);
                        failed = true;
                        break;
                    }
                }
            }
        }
        if failed {
            state = None;
        }
        shared.ops[t].store(ops, Ordering::Release);
        shared.turn.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_gets_a_phase_per_cycle_in_rotating_order() {
        let order = Mutex::new(Vec::new());
        let pass = Pass {
            cases: 3,
            workers: 2,
            secs: 0.0,
            phase: Duration::from_millis(5),
        };
        let m = pass
            .run(
                Ok,
                |_, case| {
                    anyhow::ensure!(case < 3, "step for case {case}");
                    std::thread::sleep(Duration::from_micros(100));
                    Ok(1)
                },
                |case| {
                    order.lock().unwrap().push(case);
                    Ok(())
                },
                |_| Ok(()),
            )
            .unwrap();
        // One cycle (the time is up at once), in the order 0, 1, 2. Not
        // every phase need see work: on a loaded machine a worker may pass
        // the barrier only after a 5 ms phase is over.
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
        assert_eq!(m.rates.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
        assert_eq!(m.totals.len(), 3);
    }

    /// Guards the bug of 3c39913: a worker that passed the barrier after
    /// the phase had ended ran `step` with the "between phases" value as
    /// its case, and the overhead pass indexed its sinks with it. With
    /// phases of no length nearly every worker is late.
    #[test]
    fn a_worker_late_for_a_phase_that_is_over_does_no_step() {
        let pass = Pass {
            cases: 2,
            workers: 16,
            secs: 0.05,
            phase: Duration::ZERO,
        };
        pass.run(
            Ok,
            |_, case| {
                anyhow::ensure!(case < 2, "step for case {case}");
                Ok(1)
            },
            |_| Ok(()),
            |_| Ok(()),
        )
        .unwrap();
    }

    #[test]
    fn a_failing_worker_fails_the_pass_with_its_own_error() {
        // A worker scheduled only after a 5 ms phase is over does no step
        // in it, which on a loaded machine can go on for many phases. The
        // pass stops at the first failure, so a long one ends as soon as
        // worker 1 has stepped in a phase of case 1, however long that
        // takes.
        let pass = Pass {
            cases: 2,
            workers: 3,
            secs: 60.0,
            phase: Duration::from_millis(5),
        };
        let r = pass.run(
            Ok,
            |t, case| {
                if *t == 1 && case == 1 {
                    anyhow::bail!("worker 1 broke");
                }
                Ok(1)
            },
            |_| Ok(()),
            |_| Ok(()),
        );
        let e = r.err().expect("the pass fails");
        assert_eq!(e.to_string(), "worker 1 broke");
    }
}
