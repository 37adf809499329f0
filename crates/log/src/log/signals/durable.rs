//! Durable waits: how a writer waits for the fsync that covers its record,
//! and how the committer wakes the writers an fsync served.
//!
//! A waiter first polls for its record, yielding the CPU, where the fsync
//! is short and its writers have the CPUs to themselves (see `poll`): no
//! wake is then needed at all. Otherwise, and once its poll runs out, it
//! sleeps on one futex shared by every waiter (`Signals::durable_seq`), so
//! the committer wakes them all with one system call. While the committer
//! gathers the next batch, the writers it woke come back one by one; only
//! the one it waits for wakes it (`Signals::gather_target`), so that a
//! group commit of 64 writers costs one wake of the committer, not 64.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::thread::futex;
use rustix::time::Timespec;

use super::Signals;
use crate::error::{Error, Result};
use crate::log::Inner;

impl Signals {
    /// Wakes every thread in `wait_durable` to re-check `durable` and the
    /// log's state, with one system call however many there are. Callers
    /// change that state first.
    ///
    /// One futex for all waiters, rather than a list of threads unparked
    /// one by one: at 64 durable writers those unparks were the largest
    /// item in the committer's profile between one fsync and the next. A
    /// waiter the fsync did not cover wakes for nothing and sleeps again;
    /// under a group commit those are the few that appended during the
    /// fsync.
    pub(crate) fn wake_durable(&self) {
        self.durable_seq.fetch_add(1, Ordering::SeqCst);
        if self.durable_waiters.load(Ordering::SeqCst) > 0 {
            // It cannot fail on a valid private futex; a waiter would still
            // look again within its timeout.
            let _ = futex::wake(&self.durable_seq, futex::Flags::PRIVATE, i32::MAX as u32);
        }
    }

    /// Publishes the records up to `upto` as durable and wakes the
    /// waiters. Returns how many durable waits had begun by then, read
    /// between the two, which the committer's next group-commit wait
    /// counts from.
    pub(crate) fn publish_durable(&self, upto: u64) -> u64 {
        self.durable.fetch_max(upto, Ordering::SeqCst);
        let entries = self.durable_entries();
        self.wake_durable();
        entries
    }

    /// Records the time the last fsync took.
    pub(crate) fn set_sync_cost(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sync_ns.store(ns, Ordering::Relaxed);
    }

    /// What the last fsync took.
    pub(crate) fn sync_cost(&self) -> Duration {
        Duration::from_nanos(self.sync_ns.load(Ordering::Relaxed))
    }

    /// Durable waits begun so far (those that found their record not yet
    /// durable).
    pub(crate) fn durable_entries(&self) -> u64 {
        self.durable_entries.load(Ordering::SeqCst)
    }

    /// The highest index some waiter wants durable.
    pub(crate) fn durable_wanted(&self) -> u64 {
        self.durable_wanted.load(Ordering::SeqCst)
    }

    /// Asks the committer to make `index` durable with its next commit.
    /// It is not kicked: a caller that waits kicks it itself.
    pub(crate) fn want_durable(&self, index: u64) {
        self.durable_wanted.fetch_max(index, Ordering::SeqCst);
    }

    /// Whether a waiter wants a record durable that is not yet.
    pub(crate) fn durable_behind(&self) -> bool {
        self.durable_wanted.load(Ordering::Acquire) > self.durable()
    }

    /// While the committer sleeps in its group-commit wait, the count of
    /// durable waits whose writer wakes it; zero otherwise.
    pub(crate) fn set_gather_target(&self, target: u64) {
        self.gather_target.store(target, Ordering::SeqCst);
    }

    /// Times polling was shut (see `poll`), for `Stats`.
    pub(crate) fn poll_shuts(&self) -> u64 {
        self.poll_gate.shuts()
    }

    /// Counts a waiter in for `index`, and wakes the committer unless it
    /// sleeps in a group-commit wait that another writer ends.
    fn begin_durable_wait(&self, index: u64) -> DurableWaiter<'_> {
        // Counted in before the first look at `durable_seq`: the committer
        // skips the wake when it sees no waiters (see `wake_durable`).
        self.durable_waiters.fetch_add(1, Ordering::SeqCst);
        let waiter = DurableWaiter(&self.durable_waiters);
        let entry = self.durable_entries.fetch_add(1, Ordering::SeqCst) + 1;
        self.want_durable(index);
        // A committer asleep in its group-commit wait is woken only by the
        // writer it waits for. SeqCst on both sides: either that writer sees
        // the target, or the committer sees the count before it sleeps.
        let target = self.gather_target.load(Ordering::SeqCst);
        if target == 0 || entry == target {
            self.kick();
        }
        waiter
    }

    /// Looks for `index` to become durable, yielding the CPU between
    /// looks, for as long as `PollGate` allows (see `poll`). Returns
    /// whether it did.
    fn poll_durable(&self, index: u64) -> bool {
        let start = Instant::now();
        let Some(window) = self.poll_gate.window(self.sync_cost(), start) else {
            return false;
        };
        self.poll_gate
            .poll(start, window, || self.durable() >= index)
    }

    /// Sleeps on the futex until `index` is durable, or `stop` gives the
    /// error to return instead. `stop` is asked after each wake, before
    /// the next sleep.
    fn sleep_until_durable(&self, index: u64, stop: impl Fn() -> Option<Error>) -> Result<()> {
        let timeout = Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        loop {
            // Read before the checks: a change after them makes the wait
            // below return at once instead of missing the wake.
            let seq = self.durable_seq.load(Ordering::SeqCst);
            if self.durable.load(Ordering::SeqCst) >= index {
                return Ok(());
            }
            if let Some(e) = stop() {
                return Err(e);
            }
            // EAGAIN (the sequence moved), EINTR and the timeout all mean
            // the same: look again.
            let _ = futex::wait(
                &self.durable_seq,
                futex::Flags::PRIVATE,
                seq,
                Some(&timeout),
            );
        }
    }
}

impl Inner {
    /// Waits until `index` is durable.
    pub(crate) fn wait_durable(&self, index: u64) -> Result<()> {
        let signals = &self.signals;
        if signals.durable() >= index {
            return Ok(());
        }
        // An index not handed out yet would keep the committer urgent (and
        // spinning) until some other record took it.
        let next = self.ring.next();
        if index >= next {
            return Err(Error::NotAppended { index, next });
        }
        let epoch = self.health.fail_epoch();
        let _waiter = signals.begin_durable_wait(index);
        if signals.poll_durable(index) {
            return Ok(());
        }
        self.counters.durable_sleeps.fetch_add(1, Ordering::Relaxed);
        signals.sleep_until_durable(index, || {
            if self.health.is_poisoned() {
                return Some(Error::Poisoned);
            }
            if self.health.failed_since(epoch) {
                return Some(self.failure_error());
            }
            if self.health.committer_stopped() || self.closed_and_drained() {
                return Some(Error::Closed);
            }
            None
        })
    }
}

/// Counts a thread out of `wait_durable` however it leaves.
struct DurableWaiter<'a>(&'a AtomicUsize);

impl Drop for DurableWaiter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
