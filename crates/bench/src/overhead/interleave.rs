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
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use weir_log::{Log, Options};

use super::load::{Case, Load, Sink};
use crate::freemem;
use crate::mutexlog::MutexLog;
use crate::phases::Pass;

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
    /// Per case, the process's CPU ns per operation in each of its phases
    /// (weir's committer included).
    pub(crate) cpu_per_op: [Vec<f64>; 3],
    /// Per case, the share of the machine's CPUs the process kept busy in
    /// each of its phases.
    pub(crate) busy: [Vec<f64>; 3],
}

impl Phases {
    /// `case`'s rate over the no-changelog rate of the same cycle, per cycle.
    pub(crate) fn paired(&self, case: usize) -> Vec<f64> {
        ratios(&self.rates[case], &self.rates[0])
    }

    /// `case`'s CPU per operation over the no-changelog case's, per cycle:
    /// what the log costs in CPU, apart from any time the CPUs stood idle.
    pub(crate) fn cpu_paired(&self, case: usize) -> Vec<f64> {
        ratios(&self.cpu_per_op[case], &self.cpu_per_op[0])
    }
}

fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x / y).collect()
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
    let pass = Pass {
        cases: Case::ALL.len(),
        workers: n,
        secs,
        phase,
    };
    let m = pass.run(
        |t| Load::open(&dirs[t], t),
        |load, case| load.step(&sinks[case]).map(|()| 2),
        |_| freemem::warm(root, WARM_BYTES),
        // What a weir phase appended is committed inside its time: it is
        // weir's cost and must not slip into the next phase.
        |case| match Case::ALL[case] {
            Case::Weir => log.sync().map(drop).map_err(Into::into),
            _ => Ok(()),
        },
    )?;
    // Every operation of a weir or mutex phase must have been recorded
    // exactly once.
    log.sync()?;
    let st = log.stats();
    log.close()?;
    if st.last_index != m.totals[1] || mlog.records() != m.totals[2] {
        bail!(
            "interleaved: weir recorded {} of {} operations, mutex {} of {}",
            st.last_index,
            m.totals[1],
            mlog.records(),
            m.totals[2]
        );
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let per_case = |f: &dyn Fn(usize, usize) -> f64| -> Result<[Vec<f64>; 3]> {
        (0..Case::ALL.len())
            .map(|c| (0..m.rates[c].len()).map(|k| f(c, k)).collect())
            .collect::<Vec<Vec<f64>>>()
            .try_into()
            .map_err(|_| anyhow!("a pass of three cases gave another number"))
    };
    // Operations in a phase: its rate times its length.
    let ops = |c: usize, k: usize| m.rates[c][k] * m.secs[c][k];
    Ok(Phases {
        rates: per_case(&|c, k| m.rates[c][k])?,
        cpu_per_op: per_case(&|c, k| m.cpu_s[c][k] * 1e9 / ops(c, k).max(1.0))?,
        busy: per_case(&|c, k| m.cpu_s[c][k] / (m.secs[c][k] * cpus))?,
    })
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
        for r in p.rates.iter().chain(&p.cpu_per_op).chain(&p.busy) {
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
            cpu_per_op: [vec![1000.0, 2000.0], vec![1040.0, 2100.0], vec![0.0; 2]],
            busy: [vec![1.0; 2], vec![1.0; 2], vec![0.7; 2]],
        };
        assert_eq!(p.paired(1), vec![0.95, 0.95]);
        assert_eq!(p.paired(2), vec![0.7, 0.72]);
        assert_eq!(p.cpu_paired(1), vec![1.04, 1.05]);
    }
}
