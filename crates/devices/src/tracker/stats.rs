//! The tracker's counters: atomics the thread bumps, and the
//! [`TrackerStats`] snapshot the handle reads without taking the lock.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of a running tracker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackerStats {
    /// Messages read from the uevent socket (every subsystem).
    pub messages: u64,
    /// Messages refused: malformed, or from an untrusted sender.
    pub refused: u64,
    /// Times the kernel dropped uevents (each followed by a re-read).
    pub overflows: u64,
    /// Changes found (and records appended, with a log), those of the
    /// start's comparison included.
    pub changes: u64,
    /// On-VG-complete commands started.
    pub activations: u64,
    /// Changes found at start by comparing the previous state with the
    /// system (records flagged `RECONCILED`).
    pub reconciled: u64,
    /// Devices probed because they were closed after writing (a metadata
    /// write raises no uevent), or polled because they have no watch.
    pub writes: u64,
    /// Times inotify dropped write events (every watched device was
    /// probed again).
    pub write_overflows: u64,
    /// Devices LVM would read that are watched for writes now.
    pub watched: u64,
    /// Devices LVM would read that have no watch (the inotify limit) and
    /// are polled instead, now.
    pub unwatched: u64,
}

#[derive(Default)]
pub(super) struct SharedStats {
    pub(super) messages: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) overflows: AtomicU64,
    pub(super) changes: AtomicU64,
    pub(super) activations: AtomicU64,
    pub(super) reconciled: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) write_overflows: AtomicU64,
    pub(super) watched: AtomicU64,
    pub(super) unwatched: AtomicU64,
    /// The inventory's generation, stored (under the inventory's write
    /// lock) after everything that may have changed it.
    pub(super) generation: AtomicU64,
}

impl SharedStats {
    pub(super) fn snapshot(&self) -> TrackerStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TrackerStats {
            messages: l(&self.messages),
            refused: l(&self.refused),
            overflows: l(&self.overflows),
            changes: l(&self.changes),
            activations: l(&self.activations),
            reconciled: l(&self.reconciled),
            writes: l(&self.writes),
            write_overflows: l(&self.write_overflows),
            watched: l(&self.watched),
            unwatched: l(&self.unwatched),
        }
    }
}
