//! How far a root's long work has gone (its first reading, a restart's
//! reconciliation, a rescan), readable while the tracker's thread works.
//!
//! The thread publishes each root's status between its steps, but a
//! restart's load and rescan are one step of seconds on a big tree. So each
//! root has a [`ProgressCell`] of atomics that the thread bumps as it goes
//! and [`Tracker::roots`](super::Tracker::roots) reads at any moment:
//! `weir fs`, `/v1/status`, the metrics and the terminal's progress bar
//! all show it.

use std::sync::atomic::{AtomicU64, Ordering};

/// What a root's long work is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Walking the tree (no copy to start from): entries seen.
    Walking,
    /// Loading the tree from the persistent copy: entries loaded.
    Loading,
    /// Replaying the log's records after the copy: records.
    Replaying,
    /// Looking at every directory's times (a restart, a rescan, lost
    /// events): directories looked at.
    Rescanning,
    /// Comparing what was read with the tree as logged: directories.
    Comparing,
}

impl Phase {
    const ALL: [Phase; 5] = [
        Phase::Walking,
        Phase::Loading,
        Phase::Replaying,
        Phase::Rescanning,
        Phase::Comparing,
    ];

    /// Its name as `weir fs` shows it.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Walking => "walking",
            Phase::Loading => "loading",
            Phase::Replaying => "replaying",
            Phase::Rescanning => "rescanning",
            Phase::Comparing => "comparing",
        }
    }

    /// What [`Progress::done`] counts.
    pub fn unit(&self) -> &'static str {
        match self {
            Phase::Walking | Phase::Loading => "entries",
            Phase::Replaying => "records",
            Phase::Rescanning | Phase::Comparing => "directories",
        }
    }

    fn code(self) -> u64 {
        Phase::ALL
            .iter()
            .position(|p| *p == self)
            .map_or(0, |i| i as u64 + 1)
    }

    fn from_code(c: u64) -> Option<Phase> {
        let i = usize::try_from(c.checked_sub(1)?).ok()?;
        Phase::ALL.get(i).copied()
    }
}

/// A root's long work, as far as it has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// What it is doing.
    pub phase: Phase,
    /// How much of it is done, in [`Phase::unit`]s.
    pub done: u64,
    /// How much there is, when known (a walk of a tree never seen does
    /// not know).
    pub total: Option<u64>,
}

/// No total.
const UNKNOWN: u64 = u64::MAX;

/// One root's progress, shared between the thread and the readers.
///
/// The three figures are separate atomics, so a reader may see a phase
/// with the figures of the one before for an instant: what a progress
/// report can afford, and never what the tree holds.
#[derive(Debug)]
pub(crate) struct ProgressCell {
    /// 0 when idle, else the phase's code.
    phase: AtomicU64,
    done: AtomicU64,
    total: AtomicU64,
}

impl Default for ProgressCell {
    fn default() -> ProgressCell {
        ProgressCell {
            phase: AtomicU64::new(0),
            done: AtomicU64::new(0),
            total: AtomicU64::new(UNKNOWN),
        }
    }
}

impl ProgressCell {
    /// Starts `phase`, nothing of it done.
    pub(crate) fn begin(&self, phase: Phase, total: Option<u64>) {
        self.done.store(0, Ordering::Relaxed);
        self.total
            .store(total.unwrap_or(UNKNOWN), Ordering::Relaxed);
        self.phase.store(phase.code(), Ordering::Release);
    }

    /// `done` of the phase are done.
    pub(crate) fn set(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
    }

    /// `n` more are done.
    pub(crate) fn add(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// The work is over.
    pub(crate) fn end(&self) {
        self.phase.store(0, Ordering::Release);
    }

    /// Where it stands; `None` when idle.
    pub(crate) fn get(&self) -> Option<Progress> {
        let phase = Phase::from_code(self.phase.load(Ordering::Acquire))?;
        let total = self.total.load(Ordering::Relaxed);
        let total = (total != UNKNOWN).then_some(total);
        let done = self.done.load(Ordering::Relaxed);
        Some(Progress {
            phase,
            done: total.map_or(done, |t| done.min(t)),
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_tells_its_phase_until_it_ends() {
        let c = ProgressCell::default();
        assert_eq!(c.get(), None);
        c.begin(Phase::Loading, Some(10));
        c.add(4);
        c.add(3);
        assert_eq!(
            c.get(),
            Some(Progress {
                phase: Phase::Loading,
                done: 7,
                total: Some(10)
            })
        );
        c.set(12);
        assert_eq!(c.get().map(|p| p.done), Some(10), "never past the total");
        c.begin(Phase::Walking, None);
        assert_eq!(
            c.get(),
            Some(Progress {
                phase: Phase::Walking,
                done: 0,
                total: None
            })
        );
        c.end();
        assert_eq!(c.get(), None);
    }

    #[test]
    fn every_phase_has_a_code_a_name_and_a_unit() {
        for p in Phase::ALL {
            assert_eq!(Phase::from_code(p.code()), Some(p));
            assert!(!p.name().is_empty() && !p.unit().is_empty());
        }
        assert_eq!(Phase::from_code(0), None);
        assert_eq!(Phase::from_code(99), None);
    }
}
