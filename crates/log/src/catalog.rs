//! The segment catalog: the segments the log holds, oldest first, and the
//! oldest index still in them.
//!
//! The committer adds and seals segments, retention removes them, and
//! readers and `stats` look. Its lock is a leaf: it is taken only inside
//! these methods, which take no other lock and hand out copies, never a
//! guard. So the consumer store's lock, which retention holds while it
//! reads and updates the catalog, always comes first, and the reverse
//! order cannot be written.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A segment as the log tracks it.
#[derive(Debug, Clone)]
pub(crate) struct SegEntry {
    pub(crate) base: u64,
    pub(crate) path: PathBuf,
    /// The last index, once sealed.
    pub(crate) last: Option<u64>,
    /// File length.
    pub(crate) bytes: u64,
    /// Time of the newest record; 0 while not known (a segment found at
    /// open, until its footer is read).
    pub(crate) last_time_ns: u64,
    /// Whether retention has read the footer for the time: one that gave
    /// none (a damaged footer) is not read again on every pass.
    pub(crate) time_read: bool,
}

/// The segments of an open log.
#[derive(Debug)]
pub(crate) struct Catalog {
    segments: RwLock<Vec<SegEntry>>,
    /// The oldest index still in the log: the first segment's base, or the
    /// next index while there is none.
    first_index: AtomicU64,
}

impl Catalog {
    /// The catalog of the segments recovery found, oldest first; `next` is
    /// the next index to be appended.
    pub(crate) fn new(segments: Vec<SegEntry>, next: u64) -> Catalog {
        Catalog {
            first_index: AtomicU64::new(segments.first().map_or(next, |s| s.base)),
            segments: RwLock::new(segments),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<SegEntry>> {
        self.segments.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<SegEntry>> {
        self.segments.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The oldest index still in the log.
    pub(crate) fn first_index(&self) -> u64 {
        self.first_index.load(Ordering::Acquire)
    }

    /// Adds the segment the committer has just created.
    pub(crate) fn push(&self, segment: SegEntry) {
        self.write().push(segment);
    }

    /// Records that the segment `base` is sealed: its last index, its
    /// length and the time of its newest record.
    pub(crate) fn seal(&self, base: u64, last: u64, bytes: u64, last_time_ns: u64) {
        if let Some(s) = self.write().iter_mut().find(|s| s.base == base) {
            s.last = Some(last);
            s.bytes = bytes;
            s.last_time_ns = last_time_ns;
        }
    }

    /// Keeps the time of a segment's newest record, read from its footer
    /// (segments found at open carry none until then); 0 if the footer
    /// gave none.
    pub(crate) fn set_last_time(&self, base: u64, last_time_ns: u64) {
        if let Some(e) = self.write().iter_mut().find(|e| e.base == base) {
            e.last_time_ns = last_time_ns;
            e.time_read = true;
        }
    }

    /// Takes `removed` out of the catalog and moves the first index up to
    /// the oldest segment left.
    pub(crate) fn remove(&self, removed: &[SegEntry]) {
        let mut segs = self.write();
        segs.retain(|s| !removed.iter().any(|d| d.base == s.base));
        if let Some(first) = segs.first() {
            self.first_index.store(first.base, Ordering::Release);
        }
    }

    /// A copy of every entry, oldest first.
    pub(crate) fn snapshot(&self) -> Vec<SegEntry> {
        self.read().clone()
    }

    /// Each segment's base and path, oldest first.
    pub(crate) fn paths(&self) -> Vec<(u64, PathBuf)> {
        self.read()
            .iter()
            .map(|s| (s.base, s.path.clone()))
            .collect()
    }

    /// How many segments there are, and their bytes in all.
    pub(crate) fn count_and_bytes(&self) -> (usize, u64) {
        let segs = self.read();
        (segs.len(), segs.iter().map(|s| s.bytes).sum())
    }
}
