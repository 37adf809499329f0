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
//! leaves nothing for the next one to pay for. The phases are run by
//! `phases::Pass`.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use weir_log::{Log, Options, Record, RecordType};

use super::record_parts;
use crate::mutexlog::MutexLog;
use crate::phases::Pass;

/// The cases, as the pass numbers them.
const WEIR: usize = 0;
const MUTEX: usize = 1;

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
    let pass = Pass {
        cases: 2,
        workers: w,
        secs,
        phase,
    };
    let m = pass.run(
        record_parts,
        |(parent, name), case| {
            let rec = Record::new(RecordType::CREAT).parent(parent).name(name);
            match case {
                WEIR => log.append_durable(&rec).map(drop)?,
                _ => mlog.append(&rec, true)?,
            }
            Ok(1)
        },
        |_| Ok(()),
        |_| Ok(()),
    )?;
    // Every append of either case must be in its log exactly once.
    let st = log.stats();
    log.close()?;
    let (weir, mutex) = (m.totals[WEIR], m.totals[MUTEX]);
    if st.durable_index != weir || mlog.records() != mutex {
        bail!(
            "interleaved: weir holds {} durable records of {weir}, mutex {} of {mutex}",
            st.durable_index,
            mlog.records(),
        );
    }
    let [weir, mutex]: [Vec<f64>; 2] = m
        .rates
        .try_into()
        .map_err(|_| anyhow!("a pass of two cases gave another number"))?;
    Ok(Phases { weir, mutex })
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
