//! The log's health: open, closing, failing or poisoned, whether the commit
//! thread has ended, and the last commit failure, kept so that waiters can
//! be told why they failed.
//!
//! The committer and the consumer calls change it; writers and waiters
//! read it. A failure is recorded in one place, [`Health::record`], so
//! that what waiters rely on (the cause is written before the count of
//! failures moves) holds for every kind of failure.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Why a commit failed, kept so that waiters can be told.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FailKind {
    NoSpace,
    Io(io::ErrorKind, Option<i32>),
}

impl FailKind {
    fn of(err: &io::Error) -> FailKind {
        if err.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error()) {
            FailKind::NoSpace
        } else {
            FailKind::Io(err.kind(), err.raw_os_error())
        }
    }
}

/// Why the log is poisoned (see [`crate::log::Inner::poison`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Poison<'a> {
    /// An fsync of `what` failed: the kernel may have dropped dirty pages
    /// it could not write.
    Fsync(&'a io::Error, &'static str),
    /// The commit thread ended while the log was open (a panic, which is a
    /// bug): nothing would commit what writers append.
    CommitterStopped,
}

/// Whether the log takes writes, and why not.
#[derive(Debug, Default)]
pub(crate) struct Health {
    poisoned: AtomicBool,
    closing: AtomicBool,
    /// A write failed and is being retried; the next write that succeeds
    /// clears it.
    failing: AtomicBool,
    /// The commit thread has ended (see `commit::Stopped`).
    committer_stopped: AtomicBool,
    /// Counts commit failures, so that a waiter can tell one happened
    /// since it started without taking `last`'s lock.
    fail_epoch: AtomicU64,
    /// The last failure; written before `fail_epoch` moves.
    last: Mutex<Option<FailKind>>,
}

impl Health {
    /// `Poisoned` or `Closed` if the log takes no more writes.
    #[inline]
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_poisoned() {
            return Err(Error::Poisoned);
        }
        if self.is_closing() {
            return Err(Error::Closed);
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Starts the close: writers are refused from here on, and the
    /// committer drains what they appended.
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    /// Whether writes are failing and being retried.
    pub(crate) fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }

    /// Whether the commit thread has ended.
    pub(crate) fn committer_stopped(&self) -> bool {
        self.committer_stopped.load(Ordering::Acquire)
    }

    /// Notes that the commit thread has ended, however it ended.
    pub(crate) fn set_committer_stopped(&self) {
        self.committer_stopped.store(true, Ordering::Release);
    }

    /// The count of failures so far, for [`Health::failed_since`].
    pub(crate) fn fail_epoch(&self) -> u64 {
        self.fail_epoch.load(Ordering::Acquire)
    }

    /// Whether a failure was recorded after `epoch` was read.
    pub(crate) fn failed_since(&self, epoch: u64) -> bool {
        self.fail_epoch() != epoch
    }

    /// The last failure recorded, if any.
    pub(crate) fn last_failure(&self) -> Option<FailKind> {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `err` as the last failure, for waiters. Every failure goes
    /// through here.
    fn record(&self, err: &io::Error) {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        *last = Some(FailKind::of(err));
        // Under the lock: a waiter that sees the new epoch and then locks
        // finds this failure.
        self.fail_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// A write failed; its records stay queued and are retried.
    pub(crate) fn write_failed(&self, err: &io::Error) {
        self.record(err);
        self.failing.store(true, Ordering::Release);
    }

    /// A write succeeded. Returns whether writes had been failing.
    pub(crate) fn write_succeeded(&self) -> bool {
        self.failing.swap(false, Ordering::AcqRel)
    }

    /// Poisons the log, recording the I/O error behind it, if any, as the
    /// last failure. Returns whether it was not poisoned before.
    pub(crate) fn poison(&self, why: Poison<'_>) -> bool {
        if let Poison::Fsync(err, _) = why {
            self.record(err);
        }
        !self.poisoned.swap(true, Ordering::AcqRel)
    }
}
