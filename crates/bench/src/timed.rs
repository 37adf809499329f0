//! Running N threads against the clock: all start together, run until the
//! deadline, and report how much work they did in how long.
//!
//! Each worker does its setup, then calls [`Ticket::ready`]; the clock starts
//! when every worker is ready, so setup is never timed. A worker that fails
//! stops the others. The elapsed time is taken when the stop flag is raised;
//! work finished after that (at most one operation per thread) is counted,
//! which overstates rates by far less than the noise. The process's CPU
//! time over the run (every thread, the log's committer included) is taken
//! too: on a shared machine it is steadier than wall-clock rates.

use std::cell::Cell;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use rustix::time::{ClockId, clock_gettime};

struct Shared {
    start: Barrier,
    stop: AtomicBool,
}

/// A worker's view of the run.
pub(crate) struct Ticket<'a> {
    shared: &'a Shared,
    readied: Cell<bool>,
}

impl Ticket<'_> {
    /// Waits until every worker is ready; the clock starts then.
    pub(crate) fn ready(&self) {
        if !self.readied.replace(true) {
            self.shared.start.wait();
        }
    }

    /// Whether the run is over.
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }
}

/// What a run did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timed {
    /// Work done, summed over the workers.
    pub(crate) count: u64,
    /// Wall-clock seconds from the start to the stop.
    pub(crate) elapsed_s: f64,
    /// CPU seconds used by the whole process in that time.
    pub(crate) cpu_s: f64,
}

impl Timed {
    /// Work per wall-clock second.
    pub(crate) fn rate(&self) -> f64 {
        self.count as f64 / self.elapsed_s
    }
}

/// Clock `id` in ns: with the CPU clocks, the scheduler's runtime of this
/// process or of the calling thread.
pub(crate) fn clock_ns(id: ClockId) -> u64 {
    let t = clock_gettime(id);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// The CPU time of every thread of this process so far, in seconds.
pub(crate) fn process_cpu_s() -> f64 {
    clock_ns(ClockId::ProcessCPUTime) as f64 / 1e9
}

/// Runs `n` workers for `secs` seconds. Each returns a count of work done.
pub(crate) fn run_for<F>(n: usize, secs: f64, f: F) -> Result<Timed>
where
    F: Fn(usize, &Ticket<'_>) -> Result<u64> + Sync,
{
    let shared = Shared {
        start: Barrier::new(n + 1),
        stop: AtomicBool::new(false),
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (shared, f) = (&shared, &f);
                s.spawn(move || {
                    let ticket = Ticket {
                        shared,
                        readied: Cell::new(false),
                    };
                    let r = f(t, &ticket);
                    if r.is_err() {
                        shared.stop.store(true, Ordering::Relaxed);
                    }
                    // A worker that failed during setup still passes the
                    // barrier, so the others and the clock are not stuck.
                    ticket.ready();
                    r
                })
            })
            .collect();
        shared.start.wait();
        let t0 = Instant::now();
        let cpu0 = process_cpu_s();
        let deadline = t0 + Duration::from_secs_f64(secs);
        loop {
            let now = Instant::now();
            if now >= deadline || shared.stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
        }
        shared.stop.store(true, Ordering::Relaxed);
        let elapsed_s = t0.elapsed().as_secs_f64();
        let cpu_s = process_cpu_s() - cpu0;
        let mut total = 0;
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(k)) => total += k,
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow!("a worker panicked"));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(Timed {
                count: total,
                elapsed_s,
                cpu_s,
            }),
        }
    })
}
