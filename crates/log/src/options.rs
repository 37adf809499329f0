//! Options for opening a log, with the defaults and their reasons.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, StdFs};
use crate::segment::{BLOCK, Footer, HEADER_LEN, INDEX_STRIDE, MAX_SEGMENT};

/// What to do when the log reaches its size limit while a consumer still
/// needs the oldest segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FullPolicy {
    /// Evict the most idle consumer (oldest last activity, then the one
    /// furthest behind) and write a MARK record that says so, as Lustre's
    /// `changelog_gc` does. Repeats until the log fits.
    #[default]
    EvictMostIdle,
    /// Delete the oldest segments anyway; lagging consumers then get
    /// [`Error::Truncated`](crate::Error::Truncated) and a MARK record says so.
    DropOldest,
}

/// How a new segment's space is reserved.
///
/// `fallocate` reserves blocks but leaves them unwritten, and the first
/// fsync after a write into such blocks commits the filesystem's journal to
/// record them as written: on ext4 on the test VM, 130–145 µs per
/// write-and-fdatasync, against 80–100 µs for an overwrite of blocks
/// already written. Writing zeros through a segment before it takes
/// records makes each durable commit such an overwrite: about 30% more
/// durable appends per second with one writer, about 10% with 64 (whose
/// cycle is bound by waking the writers as much as by the disk). No
/// record byte is ever written twice: the zeros are written before the
/// segment holds any record, and each commit still starts in a fresh
/// block.
///
/// The zeros are written in the background, into a spare file
/// (`spare.wlog.tmp`) the next segment is made from, so a segment roll
/// waits for none of it. The spare counts towards the size limit like a
/// segment: segments nobody needs are deleted to make room for it, but
/// where lagging consumers fill the limit no spare is made.
/// A clean close keeps a finished spare (`spare.wlog.ready`) for the next
/// open's first segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Preallocation {
    /// Zero-fill where the filesystem overwrites blocks in place (ext4,
    /// xfs: [`FileSystem::overwrites_in_place`]); only `fallocate` where
    /// zeros would be copied on write (btrfs, which they would fragment)
    /// or where fsync costs nothing (tmpfs).
    #[default]
    Auto,
    /// `fallocate` only: half the bytes written, for logs that are rarely
    /// synced.
    Reserve,
    /// Zero-fill on any filesystem.
    ZeroFill,
}

/// Space and consumer-idleness limits, and the history kept for reading.
///
/// Segments are deleted oldest first. A segment every consumer has cleared
/// is deleted at once, as Lustre purges a changelog its users have
/// cleared, unless the floor ([`keep_bytes`](Self::keep_bytes) and
/// [`keep_age`](Self::keep_age)) keeps it for people to read. The limits
/// ([`max_bytes`](Self::max_bytes), [`max_age`](Self::max_age)) bound the
/// log from above and win over the floor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// Total size of the log's files: every segment, the active one at its
    /// full preallocated size, and the spare segment being zero-filled
    /// (see [`Preallocation`]). Reaching it applies [`FullPolicy`] when
    /// consumers lag, and deletes the oldest segments when none do, those
    /// inside the floor too.
    pub max_bytes: u64,
    /// With no consumers, segments whose newest record is older are
    /// deleted, those inside the floor too.
    pub max_age: Option<Duration>,
    /// The floor's size: a segment every consumer has cleared is kept
    /// while it holds any of the newest `keep_bytes` of the log's segment
    /// files (the active one at its full size) and its newest record is
    /// younger than [`keep_age`](Self::keep_age). So the newest history
    /// stays readable whatever consumers clear: a consumer whose mask
    /// moves it past every record deletes nothing recent. 0 turns the floor off: cleared segments go at once. The
    /// default is 0, so that the log is a mechanism; the daemon sets a
    /// floor for a host.
    pub keep_bytes: u64,
    /// The floor's age: a cleared segment whose newest record is this old
    /// goes, whatever [`keep_bytes`](Self::keep_bytes) says. A segment
    /// whose time cannot be read (a damaged footer) is kept by size
    /// alone. Zero turns the floor off; [`Duration::MAX`] keeps by size
    /// alone.
    pub keep_age: Duration,
    /// The policy at the size limit.
    pub on_full: FullPolicy,
    /// A consumer more than this many records behind is evicted.
    pub max_idle_records: Option<u64>,
    /// A consumer is evicted once it has not cleared for this long and the
    /// oldest record waiting for it is as old: one with nothing to read is
    /// never idle, however long ago it last cleared.
    pub max_idle_time: Option<Duration>,
}

impl Retention {
    /// Whether the floor keeps anything: both its size and its age are
    /// positive.
    pub fn has_floor(&self) -> bool {
        self.keep_bytes > 0 && !self.keep_age.is_zero()
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_bytes: 4 << 30,
            max_age: None,
            // No floor: cleared segments go at once, as Lustre's do.
            keep_bytes: 0,
            keep_age: Duration::ZERO,
            on_full: FullPolicy::EvictMostIdle,
            // Lustre's defaults: changelog_max_idle_indexes and
            // changelog_max_idle_time (30 days).
            max_idle_records: Some(2_097_446_912),
            max_idle_time: Some(Duration::from_secs(30 * 24 * 3600)),
        }
    }
}

/// How a log is opened.
#[derive(Debug, Clone)]
pub struct Options {
    /// Preallocated size of each segment. Larger segments mean fewer files
    /// and directory fsyncs; smaller ones free space at a finer grain.
    pub segment_size: u64,
    /// Appended records reach the OS within this interval.
    pub flush_interval: Duration,
    /// Records are made durable (fsync) at least this often, even without a
    /// durable append (default 5 s). Staying well under the kernel's 30 s
    /// dirty-page expiry keeps partially filled blocks from reaching disk
    /// through writeback, which would make the next commit rewrite them. Each
    /// such sync pads to 4 KiB, so a shorter interval costs space under a
    /// trickle of records. `None` leaves durability to explicit requests.
    pub sync_interval: Option<Duration>,
    /// Slots in the append ring (a power of two): how many records can wait
    /// for the commit stage before writers wait. Each slot is 128 bytes.
    ///
    /// The default, 65536 (8 MiB of slots), is sized for a writer that the
    /// scheduler leaves runnable but not running between reserving its
    /// index and publishing its record: the committer cannot pass that hole
    /// in order, so the ring must hold what every other writer appends
    /// meanwhile. With 16 writers on 2 CPUs such holes last tens of
    /// milliseconds; at half a million appends per second a 16384-slot ring
    /// was half full within 17 ms, and the committer then lifted about 10%
    /// of all records past holes (a copy, an allocation and a map entry
    /// each), which cost 1–2 points of the create/unlink rate at 8 and 16
    /// writers. Half of 65536 slots lasts about 65 ms at that rate.
    pub ring_slots: usize,
    /// The longest a writer waits for room before it gets an error.
    pub append_timeout: Duration,
    /// Group commit: the longest the committer waits, before an fsync, for
    /// the durable writers the last fsync released to append again, so
    /// that one fsync serves them all (default 2 ms). It never waits more
    /// than half the last fsync's cost, and the last writer back ends the
    /// wait. A longer bound can fill batches on a disk whose fsync takes
    /// many milliseconds; zero turns the wait off.
    pub group_commit_wait: Duration,
    /// Space and idleness limits.
    pub retention: Retention,
    /// How segments are preallocated.
    pub preallocation: Preallocation,
    /// The filesystem, replaceable for fault injection.
    pub fs: Arc<dyn FileSystem>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_size: 8 << 20,
            flush_interval: Duration::from_millis(10),
            sync_interval: Some(Duration::from_secs(5)),
            ring_slots: 65536,
            append_timeout: Duration::from_secs(10),
            group_commit_wait: Duration::from_millis(2),
            retention: Retention::default(),
            preallocation: Preallocation::default(),
            fs: Arc::new(StdFs),
        }
    }
}

impl Options {
    /// Sets the segment size.
    pub fn segment_size(mut self, bytes: u64) -> Self {
        self.segment_size = bytes;
        self
    }

    /// Sets the flush interval.
    pub fn flush_interval(mut self, d: Duration) -> Self {
        self.flush_interval = d;
        self
    }

    /// Sets the sync interval.
    pub fn sync_interval(mut self, d: Option<Duration>) -> Self {
        self.sync_interval = d;
        self
    }

    /// Sets how segments are preallocated.
    pub fn preallocation(mut self, p: Preallocation) -> Self {
        self.preallocation = p;
        self
    }

    /// Sets the ring size.
    pub fn ring_slots(mut self, n: usize) -> Self {
        self.ring_slots = n;
        self
    }

    /// Sets the append timeout.
    pub fn append_timeout(mut self, d: Duration) -> Self {
        self.append_timeout = d;
        self
    }

    /// Sets the group-commit wait's bound.
    pub fn group_commit_wait(mut self, d: Duration) -> Self {
        self.group_commit_wait = d;
        self
    }

    /// Sets the retention limits.
    pub fn retention(mut self, r: Retention) -> Self {
        self.retention = r;
        self
    }

    /// Sets the filesystem.
    pub fn fs(mut self, fs: Arc<dyn FileSystem>) -> Self {
        self.fs = fs;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |option, reason| Err(Error::BadOption { option, reason });
        if self.segment_size < 64 * 1024 || !self.segment_size.is_multiple_of(BLOCK) {
            return bad(
                "segment_size",
                "must be a multiple of 4 KiB and at least 64 KiB",
            );
        }
        if self.segment_size > MAX_SEGMENT {
            return bad("segment_size", "must be at most 64 GiB");
        }
        if !self.ring_slots.is_power_of_two() || self.ring_slots < 2 {
            return bad("ring_slots", "must be a power of two, at least 2");
        }
        if self.flush_interval.is_zero() {
            return bad("flush_interval", "must be positive");
        }
        if self.retention.max_bytes < 2 * self.segment_size {
            return bad("retention.max_bytes", "must hold at least two segments");
        }
        Ok(())
    }

    /// Where record data must end in a segment, leaving room for the footer.
    pub(crate) fn max_data_end(&self) -> u64 {
        let entries = (self.segment_size / INDEX_STRIDE + 2) as usize;
        let reserve = (Footer::len_for(entries)).div_ceil(BLOCK) * BLOCK;
        self.segment_size - reserve
    }

    /// The largest encoded record a segment can hold.
    pub(crate) fn max_record(&self) -> usize {
        let room = self.max_data_end() - HEADER_LEN;
        (room as usize).min(crate::codec::MAX_FRAME)
    }
}
