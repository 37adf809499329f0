//! The tracker's counters: [`TrackerStats`], the snapshot the handle
//! gives out, and the atomics the thread updates behind it, the reading
//! budget's gauge included.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::budget::BudgetGauge;

/// Counters of a running tracker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackerStats {
    /// fanotify events read.
    pub events: u64,
    /// Reads of the fanotify group that returned events: how often events
    /// woke the tracker. In a storm it reads a few events each time (see
    /// `TrackerOptions::batch`); far fewer than `events`.
    pub event_reads: u64,
    /// Times the tracker's loop woke, for any reason: events, a change
    /// to mountinfo, a request, a deadline.
    pub wakeups: u64,
    /// fanotify queue overflows (each followed by a full resynchronisation).
    pub overflows: u64,
    /// Whole-table readings and comparisons.
    pub readings: u64,
    /// Changes found (and records appended, with a log).
    pub changes: u64,
    /// CPU time of the tracker's thread, ns.
    pub cpu_ns: u64,
    /// CPU time of the whole-table readings alone, ns.
    pub reading_cpu_ns: u64,
    /// Of `changes`, those found at start against a previous table
    /// (records flagged `FLAG_RECONCILED`).
    pub reconciled: u64,
    /// The reading budget's tokens now, ns of CPU time. Negative while
    /// readings have overspent it: held-back readings wait until it is
    /// back to zero.
    pub budget_tokens_ns: i64,
    /// The most tokens the budget holds, ns.
    pub budget_capacity_ns: u64,
    /// Whether a whole-table reading is wanted now but held back by the
    /// budget (in debt). It runs once the debt is repaid, or when
    /// `TrackerOptions::max_delay` forces it.
    pub budget_throttled: bool,
    /// Readings the budget held back, each counted once however long it
    /// waited.
    pub budget_deferred: u64,
}

/// The atomics behind [`TrackerStats`], shared by the handle and the
/// thread.
#[derive(Default)]
pub(crate) struct SharedStats {
    pub(super) events: AtomicU64,
    pub(super) event_reads: AtomicU64,
    pub(super) wakeups: AtomicU64,
    pub(super) overflows: AtomicU64,
    pub(super) readings: AtomicU64,
    pub(super) changes: AtomicU64,
    pub(super) cpu_ns: AtomicU64,
    pub(super) reading_cpu_ns: AtomicU64,
    pub(super) reconciled: AtomicU64,
    /// Bumped under the state's write lock on every change to the table.
    pub(super) generation: AtomicU64,
    pub(super) budget: BudgetGauge,
    pub(super) throttled: AtomicBool,
    pub(super) deferred: AtomicU64,
}

impl SharedStats {
    pub(super) fn snapshot(&self) -> TrackerStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (budget_tokens_ns, budget_capacity_ns) = self.budget.level(Instant::now());
        TrackerStats {
            events: l(&self.events),
            event_reads: l(&self.event_reads),
            wakeups: l(&self.wakeups),
            overflows: l(&self.overflows),
            readings: l(&self.readings),
            changes: l(&self.changes),
            cpu_ns: l(&self.cpu_ns),
            reading_cpu_ns: l(&self.reading_cpu_ns),
            reconciled: l(&self.reconciled),
            budget_tokens_ns,
            budget_capacity_ns,
            budget_throttled: self.throttled.load(Ordering::Relaxed),
            budget_deferred: l(&self.deferred),
        }
    }

    /// Whether a due reading is held back by the budget now; a new hold
    /// counts one deferred reading.
    pub(super) fn set_throttled(&self, held: bool) {
        if self.throttled.swap(held, Ordering::Relaxed) != held && held {
            self.deferred.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_new_hold_counts_one_deferred_reading() {
        let s = SharedStats::default();
        assert!(!s.snapshot().budget_throttled);
        s.set_throttled(true);
        // The loop re-evaluates while it waits: still the same reading.
        s.set_throttled(true);
        let now = s.snapshot();
        assert_eq!((now.budget_throttled, now.budget_deferred), (true, 1));
        s.set_throttled(false);
        s.set_throttled(false);
        assert_eq!(s.snapshot().budget_deferred, 1);
        assert!(!s.snapshot().budget_throttled);
        s.set_throttled(true);
        assert_eq!(s.snapshot().budget_deferred, 2);
    }
}
