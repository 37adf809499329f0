//! The signals between writers, waiters, readers and the committer: the
//! committed and durable indexes, what callers want written or synced
//! sooner, the committer's kicks and idleness, and the futex, condvars and
//! thread handle that carry the wakes.
//!
//! Each hand-off between them (a kick counted before its unpark, an index
//! published before its wake, a waiter counted in before it looks) is kept
//! inside one method here, so that no caller can do half of one. A plain
//! append reads whether the committer is idle and now and then kicks it;
//! nothing here adds to that.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use super::poll::PollGate;

mod durable;

/// The shared half of the writer–committer hand-offs.
pub(crate) struct Signals {
    /// The last index written to the OS: readers see up to here.
    committed: AtomicU64,
    /// The last index made durable.
    durable: AtomicU64,
    /// The highest index some waiter wants durable.
    durable_wanted: AtomicU64,
    /// The highest index some caller wants written to the OS now, ahead
    /// of the flush interval (a consumer clearing what it just appended).
    commit_wanted: AtomicU64,
    /// Kicks of the committer so far. A kick also leaves an unpark token
    /// when the committer is awake; counting them lets the committer tell
    /// a wake that asks for something from that stale token, which used to
    /// cut its batch window short and write early.
    wakes: AtomicU64,
    /// The committer parked with nothing to do: the next append wakes it.
    committer_idle: AtomicBool,
    /// Writers waiting for room in the ring (see `wait_for_room`).
    space_waiters: AtomicUsize,
    /// Threads inside `wait_durable`: the committer makes the wake system
    /// call only when there are some.
    durable_waiters: AtomicUsize,
    /// Calls of `wait_durable` that had to wait, ever. Between fsyncs the
    /// committer counts how many writers one satisfied, and waits for that
    /// many to come back before the next, so batches stay large.
    durable_entries: AtomicU64,
    /// While the committer sleeps in its group-commit wait: the count of
    /// `durable_entries` it waits for, so that only the writer reaching it
    /// wakes the committer. Zero otherwise.
    gather_target: AtomicU64,
    /// What the committer's last fsync took, in ns: it bounds the
    /// committer's group-commit wait, and durable waiters look for their
    /// records rather than sleep when it is short (see `poll`).
    sync_ns: AtomicU64,
    /// Whether durable waiters may poll rather than sleep (see `poll`).
    poll_gate: PollGate,
    /// The futex durable waiters sleep on. It changes whenever `durable`
    /// advances or the log's state changes under them (a failure, poison,
    /// close); see [`Signals::wake_durable`].
    durable_seq: AtomicU32,
    /// Held to look at a condition before waiting on `space_cv` or
    /// `commit_cv`, and to notify them: a notify cannot then fall between
    /// a waiter's look and its wait. It guards no data.
    condvar_lock: Mutex<()>,
    space_cv: Condvar,
    commit_cv: Condvar,
    committer: OnceLock<Thread>,
    /// The commit thread's kernel thread id, set by the thread when it
    /// starts (for its CPU time in `Stats`).
    committer_tid: OnceLock<i32>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("committed", &self.committed)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

impl Signals {
    /// The signals of a log whose records up to `last` are on disk.
    pub(crate) fn new(last: u64) -> Signals {
        Signals {
            committed: AtomicU64::new(last),
            durable: AtomicU64::new(last),
            durable_wanted: AtomicU64::new(0),
            commit_wanted: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            committer_idle: AtomicBool::new(false),
            space_waiters: AtomicUsize::new(0),
            durable_waiters: AtomicUsize::new(0),
            durable_entries: AtomicU64::new(0),
            gather_target: AtomicU64::new(0),
            sync_ns: AtomicU64::new(0),
            poll_gate: PollGate::new(),
            durable_seq: AtomicU32::new(0),
            condvar_lock: Mutex::new(()),
            space_cv: Condvar::new(),
            commit_cv: Condvar::new(),
            committer: OnceLock::new(),
            committer_tid: OnceLock::new(),
        }
    }

    fn lock_condvars(&self) -> MutexGuard<'_, ()> {
        self.condvar_lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the committer's thread, for kicks, once it is spawned.
    pub(crate) fn set_committer(&self, thread: Thread) {
        let _ = self.committer.set(thread);
    }

    /// The committer's thread, once set.
    #[cfg(test)]
    pub(crate) fn committer(&self) -> Option<&Thread> {
        self.committer.get()
    }

    /// Called by the commit thread as it starts.
    pub(crate) fn set_committer_tid(&self, tid: i32) {
        let _ = self.committer_tid.set(tid);
    }

    pub(crate) fn committer_tid(&self) -> Option<i32> {
        self.committer_tid.get().copied()
    }

    /// Wakes the committer to look at its work again.
    #[inline]
    pub(crate) fn kick(&self) {
        // Before the unpark: a committer that wakes finds the count moved.
        self.wakes.fetch_add(1, Ordering::SeqCst);
        if let Some(t) = self.committer.get() {
            t.unpark();
        }
    }

    /// Kicks so far: the committer reads it before it looks at its work,
    /// and a count moved since means a kick it may not have served.
    pub(crate) fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::SeqCst)
    }

    /// Marks the committer idle (about to park with nothing to do) or
    /// awake.
    pub(crate) fn set_idle(&self, idle: bool) {
        self.committer_idle.store(idle, Ordering::SeqCst);
    }

    /// Whether the committer was idle, taking the mark if so: the caller,
    /// who has just published a record, kicks it. The SeqCst load pairs
    /// with the reservation's SeqCst CAS (see `Ring::try_reserve`); the
    /// swap is made only when the load sees the mark, so that appends to a
    /// busy committer only read the line.
    #[inline]
    pub(crate) fn take_idle(&self) -> bool {
        self.committer_idle.load(Ordering::SeqCst)
            && self.committer_idle.swap(false, Ordering::SeqCst)
    }

    /// Wakes every waiter (durable, space, followers) to look at the
    /// log's state again after a failure, poisoning or the committer's end.
    pub(crate) fn wake_all(&self) {
        self.wake_durable();
        let _g = self.lock_condvars();
        self.space_cv.notify_all();
        self.commit_cv.notify_all();
    }

    /// The last index readers can see.
    #[inline]
    pub(crate) fn committed(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    /// The last durable index.
    pub(crate) fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Whether something written to the OS awaits an fsync.
    pub(crate) fn unsynced(&self) -> bool {
        self.committed() > self.durable()
    }

    /// Publishes the records up to `upto` to readers, and wakes those that
    /// wait for them if that moved the committed index.
    pub(crate) fn publish_committed(&self, upto: u64) {
        if self.committed.fetch_max(upto, Ordering::AcqRel) < upto {
            let _g = self.lock_condvars();
            self.commit_cv.notify_all();
        }
    }

    /// Asks the committer to write the records up to `index` now, ahead
    /// of its batch window.
    pub(crate) fn want_committed(&self, index: u64) {
        self.commit_wanted.fetch_max(index, Ordering::SeqCst);
        self.kick();
    }

    /// Whether a caller waits for a record to be written that is not yet.
    pub(crate) fn commit_wanted(&self) -> bool {
        self.commit_wanted.load(Ordering::Acquire) > self.committed()
    }

    /// Waits at most `timeout` for one wake of the readers, unless the
    /// records up to `index` are already committed or `stop` holds: both
    /// are looked at under the lock the committer notifies under, so that
    /// a wake between the look and the wait is not missed.
    pub(crate) fn wait_committed(&self, index: u64, timeout: Duration, stop: impl Fn() -> bool) {
        let g = self.lock_condvars();
        if self.committed() < index && !stop() {
            let _ = self
                .commit_cv
                .wait_timeout(g, timeout)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Sleeps at most `timeout` while `has_room` does not hold, counted
    /// as a writer waiting for room, which the committer wakes as it
    /// frees slots.
    pub(crate) fn wait_for_room(&self, has_room: impl Fn() -> bool, timeout: Duration) {
        self.space_waiters.fetch_add(1, Ordering::SeqCst);
        let g = self.lock_condvars();
        if !has_room() {
            let _ = self
                .space_cv
                .wait_timeout(g, timeout)
                .unwrap_or_else(|p| p.into_inner());
        }
        self.space_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether a writer waits for room in the ring.
    pub(crate) fn space_wanted(&self) -> bool {
        self.space_waiters.load(Ordering::Acquire) > 0
    }

    /// Wakes the writers waiting for room, if any, after the committer
    /// freed slots.
    pub(crate) fn wake_space_waiters(&self) {
        // The stores that freed slots (`taken`, a lifted slot's marker) are
        // only `Release`: without the fence, the load below could pass
        // them, see no waiter, while a waiter that registered meanwhile
        // still sees the ring full, and sleeps its whole timeout. A writer
        // registers with `SeqCst` before it looks again.
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.space_waiters.load(Ordering::SeqCst) > 0 {
            let _g = self.lock_condvars();
            self.space_cv.notify_all();
        }
    }
}
