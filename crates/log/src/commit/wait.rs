//! How the committer waits: for work (a batch window, urgent work, or
//! idleness), for the next durable wait after an fsync, and for durable
//! writers to come back before the next fsync (group commit).

use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use super::{Committer, HOLE_PATIENCE, MAINTENANCE};
use crate::log::yield_until;

/// How long after an fsync that satisfied durable waiters the committer
/// looks for the next durable wait before it parks. Waking a parked thread
/// on an idle CPU took about 20 µs on the 2-vCPU test VM, paid twice per
/// record by a lone durable writer (the waiter wakes the committer, which
/// wakes the waiter): polling saves the first, and the waiter's own
/// polling (`Signals::poll_durable`) the second when fsyncs are quick.
const DURABLE_POLL: Duration = Duration::from_micros(50);
/// How long the group-commit wait spins before it sleeps (see
/// `Committer::gather_waiters`).
const GATHER_SPIN: Duration = Duration::from_micros(20);

impl Committer {
    /// Work that will not wait for a batch window. A crowded ring is not,
    /// while a hole holds its head: nothing can be taken until the hole is
    /// filled, and a committer that came straight back would spin. The
    /// writers wake it as they wait for room, and lifting comes then (see
    /// `wait_for_work` for the first).
    fn urgent(&self) -> bool {
        self.inner.signals.durable_behind()
            || (self.pending() >= self.inner.ring.capacity() / 2 && self.stuck_at_head().is_none())
            || self.inner.health.is_closing()
    }

    fn unsynced(&self) -> bool {
        self.inner.signals.unsynced()
    }

    /// Parks until there is work: a batch window after a record arrives, at
    /// once for urgent work, and idle otherwise.
    pub(super) fn wait_for_work(&mut self) {
        // Kicks from here on ask for something this look may miss; an
        // unpark token left by an earlier one does not.
        let seen = self.inner.signals.wakes();
        if self.urgent() {
            return;
        }
        if self.woken > 0 && self.poll_for_durable() {
            return;
        }
        let opts = &self.inner.opts;
        let sync_due = opts
            .sync_interval
            .filter(|_| self.unsynced())
            .map(|d| d.saturating_sub(self.last_sync.elapsed()));
        let maint = MAINTENANCE.saturating_sub(self.last_maintenance.elapsed());
        let retry = self
            .retry
            .map(|(at, _)| at.saturating_duration_since(Instant::now()));
        // Back when a hole at the head has been there long enough to lift
        // past, if the ring is crowded enough to. Lifting again after that
        // comes with the writers' wakes as they wait for room.
        let lift = self
            .stuck_at_head()
            .filter(|_| self.crowded())
            .map(|since| HOLE_PATIENCE.saturating_sub(since.elapsed()))
            .filter(|d| !d.is_zero());
        // With records pending, gather a batch for at most one flush
        // interval. With records gathered within the last interval, stay on
        // the timer for the rest of it before going idle, so a stream of
        // appends does not have to wake the committer every few records.
        let since = self.last_gather.elapsed();
        let head_ready = self.head_ready();
        // Records that arrived after an idle spell, before the committer
        // parked (after an open, say), are written at once, as they would
        // have been had they woken it. Only a placeable head counts: a
        // hole would gather nothing, and the committer would come back.
        if head_ready && since >= opts.flush_interval {
            return;
        }
        let window = if self.pending() > 0 || head_ready {
            Some(opts.flush_interval)
        } else {
            opts.flush_interval
                .checked_sub(since)
                .filter(|d| !d.is_zero())
        };
        if let Some(window) = window {
            let d = [Some(window), sync_due, retry, lift]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(window);
            self.park_window(Instant::now() + d, seen);
            return;
        }
        self.inner.signals.set_idle(true);
        if self.pending() > 0 || self.head_ready() || self.urgent() {
            self.inner.signals.set_idle(false);
            return;
        }
        let d = [Some(maint), sync_due, retry]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(maint);
        thread::park_timeout(d);
        // The first record after idleness is written at once.
        self.inner.signals.set_idle(false);
    }

    /// Sleeps until `deadline`, or until a kick after `seen` or work that
    /// will not wait for the window. A wake for neither (the unpark token
    /// of a kick this committer had already served, or a spurious one)
    /// sleeps again: it used to end the window, and write a batch early.
    fn park_window(&self, deadline: Instant, seen: u64) {
        loop {
            if self.inner.signals.wakes() != seen || self.urgent() || self.commit_wanted() {
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            thread::park_timeout(deadline - now);
        }
    }

    /// Whether a caller waits for a record to be written that can be
    /// written now. Not while a hole holds the head: the committer could
    /// place nothing and would come straight back.
    fn commit_wanted(&self) -> bool {
        self.inner.signals.commit_wanted() && self.head_ready()
    }

    /// After an fsync that satisfied durable waiters, looks for the next
    /// durable wait for [`DURABLE_POLL`] before parking: a writer that
    /// appends durably one record after another is back by then, and finds
    /// the committer awake. Returns whether there is urgent work.
    fn poll_for_durable(&self) -> bool {
        yield_until(self.last_sync + DURABLE_POLL, || self.urgent())
    }

    /// Group commit: before an fsync, give the writers the last fsync
    /// satisfied a moment to append again, bounded by half that fsync's
    /// cost and by [`group_commit_wait`] (2 ms by default), so that one
    /// fsync serves them all instead of half of them. They are back when
    /// as many durable waits have begun since as that fsync ended.
    ///
    /// [`group_commit_wait`]: crate::Options::group_commit_wait
    ///
    /// It spins (yielding) for [`GATHER_SPIN`], which catches a few writers
    /// on CPUs of their own, then sleeps until the writer that completes
    /// the count wakes it. With more writers than CPUs the spin's yields
    /// were context switches that the writers needed the CPU for: at 16
    /// durable writers sleeping took the committer's CPU per fsync from
    /// about 75 µs to 57 µs and filled batches (15.9 records per fsync,
    /// from 14.3). Sleeping at once cost 4 writers about 9%: their wake
    /// of the committer came back slower than they did.
    pub(super) fn gather_waiters(&self) {
        let inner = &self.inner;
        let bound = inner.opts.group_commit_wait;
        if self.woken < 2 || bound.is_zero() || !inner.signals.durable_behind() {
            return;
        }
        inner.counters.group_waits.fetch_add(1, Ordering::Relaxed);
        let sync_cost = inner.signals.sync_cost();
        let deadline = Instant::now() + (sync_cost / 2).min(bound);
        let target = self.entries_at_wake + self.woken;
        let back = || inner.signals.durable_entries() >= target || inner.health.is_closing();
        let spin_until = (Instant::now() + GATHER_SPIN).min(deadline);
        if yield_until(spin_until, back) {
            return;
        }
        inner.signals.set_gather_target(target);
        loop {
            if back() {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            thread::park_timeout(deadline - now);
        }
        // Counted by the time rather than by who ended the loop: a
        // committer asleep until its deadline finds the writers back then.
        if Instant::now() >= deadline {
            inner
                .counters
                .group_deadlines
                .fetch_add(1, Ordering::Relaxed);
        }
        inner.signals.set_gather_target(0);
    }
}

#[cfg(test)]
mod tests;
