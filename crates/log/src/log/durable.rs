//! Durable waits: how a writer waits for the fsync that covers its record,
//! and how the committer wakes the writers an fsync served.
//!
//! A waiter first polls for its record, yielding the CPU, where the fsync
//! is short and its writers have the CPUs to themselves (see `poll`): no
//! wake is then needed at all. Otherwise, and once its poll runs out, it
//! sleeps on one futex shared by every waiter (`Inner::durable_seq`), so
//! the committer wakes them all with one system call. While the committer
//! gathers the next batch, the writers it woke come back one by one; only
//! the one it waits for wakes it (`Inner::gather_target`), so that a group
//! commit of 64 writers costs one wake of the committer, not 64.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustix::thread::futex;
use rustix::time::Timespec;

use super::Inner;
use crate::error::{Error, Result};

impl Inner {
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

    /// Waits until `index` is durable.
    pub(crate) fn wait_durable(&self, index: u64) -> Result<()> {
        if self.durable.load(Ordering::Acquire) >= index {
            return Ok(());
        }
        // An index not handed out yet would keep the committer urgent (and
        // spinning) until some other record took it.
        let next = self.ring.next();
        if index >= next {
            return Err(Error::NotAppended { index, next });
        }
        let epoch = self.health.fail_epoch();
        // Counted in before the first look at `durable_seq`: the committer
        // skips the wake when it sees no waiters (see `wake_durable`).
        self.durable_waiters.fetch_add(1, Ordering::SeqCst);
        let _leave = DurableWaiter(&self.durable_waiters);
        let entry = self.durable_entries.fetch_add(1, Ordering::SeqCst) + 1;
        self.durable_wanted.fetch_max(index, Ordering::SeqCst);
        // A committer asleep in its group-commit wait is woken only by the
        // writer it waits for. SeqCst on both sides: either that writer sees
        // the target, or the committer sees the count before it sleeps.
        let target = self.gather_target.load(Ordering::SeqCst);
        if target == 0 || entry == target {
            self.kick();
        }
        if self.poll_durable(index) {
            return Ok(());
        }
        self.counters.durable_sleeps.fetch_add(1, Ordering::Relaxed);
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
            if self.health.is_poisoned() {
                return Err(Error::Poisoned);
            }
            if self.health.failed_since(epoch) {
                return Err(self.failure_error());
            }
            if self.health.committer_stopped() || self.closed_and_drained() {
                return Err(Error::Closed);
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

    /// Looks for `index` to become durable, yielding the CPU between
    /// looks, for as long as `PollGate` allows (see `poll`). Returns
    /// whether it did.
    fn poll_durable(&self, index: u64) -> bool {
        let sync = Duration::from_nanos(self.sync_ns.load(Ordering::Relaxed));
        let start = Instant::now();
        let Some(window) = self.poll_gate.window(sync, start) else {
            return false;
        };
        self.poll_gate.poll(start, window, || {
            self.durable.load(Ordering::Acquire) >= index
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
