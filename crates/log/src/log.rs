//! The writer's handle, [`Log`], and `Inner`, the state it shares with the
//! committer and readers. `Inner` is one `Arc` holding, by value, a group
//! per concern with its own methods: `signals` (the hand-offs with the
//! committer), `health` (open, failing, poisoned), the segment `catalog`,
//! and the consumer store (`consumers`).
//!
//! The append path touches only the ring: one CAS to reserve an index and
//! the record's own slot lock. Locks in this module are taken by durable
//! waiters, consumers, readers moving between segments, and the committer,
//! never by a plain `append`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::catalog::Catalog;
pub(crate) use crate::clock::now_ns;
use crate::cursors::Consumers;
use crate::error::{Error, Result, StallCause};
use crate::incarnation::Incarnation;
use crate::latency::{Histogram, SharedHistogram};
use crate::options::{Options, Retention};
use crate::reader::Reader;
use crate::record::Record;
use crate::recovery::{self, RecoveryReport};
use crate::ring::{Reservation, Ring};
use crate::{codec, commit};
use consumers::ConsumerStore;
use draft::Draft;
use health::{FailKind, Health, Poison};
use signals::Signals;

/// Calls `done` until it holds or `until` passes, yielding the CPU between
/// calls rather than spinning, so that on a busy CPU the thread being
/// waited for can run. Returns whether `done` held.
pub(crate) fn yield_until(until: Instant, mut done: impl FnMut() -> bool) -> bool {
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::yield_now();
    }
    false
}

/// The lock file that marks the single writer of a log directory.
pub const LOCK_FILE: &str = "LOCK";

/// Counters for `stats`.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) commits: AtomicU64,
    pub(crate) syncs: AtomicU64,
    pub(crate) bytes_written: AtomicU64,
    pub(crate) write_errors: AtomicU64,
    pub(crate) evictions: AtomicU64,
    pub(crate) ring_full: AtomicU64,
    pub(crate) lifted: AtomicU64,
    pub(crate) spilled: AtomicU64,
    /// Group-commit waits, and those of them that ended at their deadline.
    pub(crate) group_waits: AtomicU64,
    pub(crate) group_deadlines: AtomicU64,
    /// Durable waits that did not see their record while polling and went
    /// on to the futex (see `log::signals::durable`).
    pub(crate) durable_sleeps: AtomicU64,
    /// From append to the committer's write (see `latency`).
    pub(crate) commit_latency: SharedHistogram,
    /// From append to the fsync that made the record durable.
    pub(crate) durable_latency: SharedHistogram,
}

/// State shared by writer handles, the committer and readers, grouped by
/// concern. The groups are nested by value, so that the append path
/// reaches what it reads with no pointer more than before.
pub(crate) struct Inner {
    pub(crate) dir: PathBuf,
    /// The history this log belongs to; fixed for the directory's life.
    pub(crate) incarnation: Incarnation,
    pub(crate) opts: Options,
    pub(crate) ring: Ring,
    pub(crate) max_record: usize,
    /// The hand-offs between writers, waiters, readers and the committer:
    /// the committed and durable indexes, kicks, futex, condvars.
    pub(crate) signals: Signals,
    /// Open, closing, failing or poisoned, and the last failure.
    pub(crate) health: Health,
    /// The segments, oldest first, and the oldest index. Its lock is a
    /// leaf (see `catalog`).
    pub(crate) catalog: Catalog,
    /// The consumer set, behind the lock that comes before every other.
    pub(crate) consumers: ConsumerStore,
    pub(crate) counters: Counters,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("dir", &self.dir)
            .field("signals", &self.signals)
            .field("health", &self.health)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Poisons the log, recording an fsync's error as the last failure
    /// for waiters: after an fsync failure the kernel may have dropped
    /// dirty pages it could not write, so nothing written since can be
    /// trusted to be on disk; and a commit thread that ended early commits
    /// nothing more. Writers, durable waiters and consumer changes then
    /// fail until the log is reopened, and the committer stops.
    pub(crate) fn poison(&self, why: Poison<'_>) {
        if self.health.poison(why) {
            match why {
                Poison::Fsync(err, what) => {
                    tracing::error!(dir = %self.dir.display(), error = %err, what, "fsync failed; the log is poisoned until reopened");
                }
                Poison::CommitterStopped => {
                    tracing::error!(dir = %self.dir.display(), "the commit thread stopped unexpectedly; the log is poisoned");
                }
            }
        }
        self.signals.wake_all();
    }

    /// The error for the last commit failure; where none was recorded,
    /// says so, with how far records are durable.
    pub(crate) fn failure_error(&self) -> Error {
        match self.health.last_failure() {
            Some(kind) => self.fail_error(kind),
            None => Error::NotDurable {
                durable: self.signals.durable(),
            },
        }
    }

    fn fail_error(&self, kind: FailKind) -> Error {
        match kind {
            FailKind::NoSpace => Error::NoSpace,
            FailKind::Io(k, raw) => Error::Io {
                op: "commit",
                path: self.dir.clone(),
                source: raw.map_or_else(|| k.into(), std::io::Error::from_raw_os_error),
            },
        }
    }

    /// Reserves an index while the ring is full, waiting a bounded time.
    #[cold]
    fn reserve_waiting(&self, len: usize) -> Result<Reservation> {
        self.counters.ring_full.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let backoff = crossbeam_utils::Backoff::new();
        loop {
            self.signals.kick();
            if let Some(i) = self.ring.try_reserve(len) {
                return Ok(i);
            }
            self.health.check_open()?;
            if self.health.is_failing() {
                return Err(self.health.last_failure().map_or(
                    Error::Stalled {
                        waited_ms: start.elapsed().as_millis() as u64,
                        cause: StallCause::WriteFailing,
                    },
                    |k| self.fail_error(k),
                ));
            }
            let waited = start.elapsed();
            if waited >= self.opts.append_timeout {
                return Err(Error::Stalled {
                    waited_ms: waited.as_millis() as u64,
                    cause: StallCause::Slow,
                });
            }
            if !backoff.is_completed() {
                backoff.snooze();
                continue;
            }
            self.signals
                .wait_for_room(|| self.ring.has_room(len), Duration::from_millis(5));
        }
    }

    /// Appends without waiting for room: used by the committer for MARKs.
    pub(crate) fn try_append(&self, r: &Record<'_>) -> Option<u64> {
        let len = self.encoded_len(r).ok()?;
        let draft = Draft::new(r, len);
        let res = self.ring.try_reserve(len)?;
        draft.publish(&self.ring, r, res);
        Some(res.index)
    }

    pub(crate) fn append(&self, r: &Record<'_>) -> Result<u64> {
        // The counter's line is usually in another core's cache or the
        // shared one: fetching it now overlaps the fetch with the checks,
        // the clock and the encoding below.
        self.ring.prefetch_reserve();
        let len = self.encoded_len(r)?;
        self.health.check_open()?;
        let mut draft = Draft::new(r, len);
        let res = match self.ring.try_reserve(len) {
            Some(res) => res,
            None => {
                let res = self.reserve_waiting(len)?;
                // The record's time is when it got its place.
                draft = Draft::new(r, len);
                res
            }
        };
        if res.spill {
            self.counters.spilled.fetch_add(1, Ordering::Relaxed);
        }
        // Here the index is this writer's, and its slot holds nothing yet:
        // a writer preempted here is the hole the committer lifts past.
        fail_point!("weir_log::append::reserved");
        let (idx, spilled) = (res.index, res.spill);
        draft.publish(&self.ring, r, res);
        // Wake the committer when this record starts a batch after idleness,
        // and every quarter ring of appends, so that it drains (or lifts
        // past a hole) well before the ring fills. A spilled frame always
        // wakes it: the committer does not count spilled frames as
        // pending, so one that lands while it is busy could otherwise be
        // left until its next maintenance, though its hole was filled and
        // it is next in order.
        let woke_idle = self.signals.take_idle();
        if woke_idle || spilled || idx & ((self.ring.capacity() / 4).max(1) - 1) == 0 {
            self.signals.kick();
        }
        Ok(idx)
    }

    /// The record's encoded length, if this log takes it: the codec's
    /// limits, and room in one segment.
    #[inline]
    fn encoded_len(&self, r: &Record<'_>) -> Result<usize> {
        let len = codec::encoded_len(r)?;
        if len > self.max_record {
            return Err(Error::RecordTooLarge {
                size: len,
                limit: self.max_record,
            });
        }
        Ok(len)
    }

    fn closed_and_drained(&self) -> bool {
        self.health.is_closing() && commit::finished(self)
    }

    pub(crate) fn last_committed(&self) -> u64 {
        self.signals.committed()
    }
}

/// Proof that a record has its index and its place in the order. It reaches
/// the OS within the flush interval; it is not yet known to be durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[must_use = "an Appended is not durable; wait on it if durability matters"]
pub struct Appended(u64);

impl Appended {
    /// The record's index.
    pub fn index(self) -> u64 {
        self.0
    }
}

/// Proof that a record (and every record before it) has been fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Durable(u64);

impl Durable {
    /// The record's index.
    pub fn index(self) -> u64 {
        self.0
    }
}

/// A snapshot of the log's counters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// The oldest index still in the log.
    pub first_index: u64,
    /// The last index readers can see.
    pub last_index: u64,
    /// The last durable index.
    pub durable_index: u64,
    /// Segments on disk.
    pub segments: usize,
    /// Total segment bytes (file lengths).
    pub bytes: u64,
    /// The length of the spare segment file, the next segment zero-filled
    /// ahead of its roll (0 if none; see
    /// [`Preallocation`](crate::Preallocation)). It counts towards the size
    /// limit but holds no record.
    pub spare_bytes: u64,
    /// Write batches handed to the OS.
    pub commits: u64,
    /// fsyncs of segment data.
    pub syncs: u64,
    /// Bytes handed to the OS.
    pub bytes_written: u64,
    /// Failed write attempts (retried).
    pub write_errors: u64,
    /// Consumers evicted by the retention policy.
    pub evictions: u64,
    /// Appends that found the ring full and had to wait for the committer.
    pub ring_full_waits: u64,
    /// Records the committer lifted out of the ring past a writer that had
    /// reserved but not yet published (see the `ring` module).
    pub lifted: u64,
    /// Records appended to the spill map because their slot was still held
    /// by such a writer a lap earlier.
    pub spilled: u64,
    /// fsyncs before which the committer waited for the durable writers
    /// the fsync before had released to append again, so that one fsync
    /// serves them all (group commit).
    pub group_commit_waits: u64,
    /// Those waits that ended at their deadline (half the last fsync's
    /// time, at most 2 ms) before every such writer was back: writers slow
    /// to return, typically for want of CPU.
    pub group_commit_deadlines: u64,
    /// Durable waits ([`Log::append_durable`], [`Log::wait_durable`],
    /// [`Log::sync`]) that found their record not yet durable.
    pub durable_waits: u64,
    /// Of those, the ones that went on to sleep on the futex until the
    /// committer woke them: their poll, if any, did not see the record
    /// durable. The rest polled, yielding the CPU between looks, until it
    /// was: a waiter polls for up to 1 ms where the last fsync took at
    /// most 1 ms, unless polling is shut. `durable_waits -
    /// durable_sleeps` is how many waits polling saved a wake.
    pub durable_sleeps: u64,
    /// Times polling was shut for a second because polling waiters kept
    /// losing the CPU to other tasks.
    pub durable_poll_shuts: u64,
    /// Registered consumers.
    pub consumers: usize,
    /// CPU time the commit thread has used since the log was opened, ns
    /// (`None` where /proc is not available, or in the moment after
    /// `Log::open` before the thread has started). With the appenders' own
    /// time in `append`, this is what the log costs the process.
    pub committer_cpu_ns: Option<u64>,
    /// How long the records committed since the log was opened waited from
    /// their append (the time in their frame) until the committer had
    /// written them to the OS, which is when readers see them.
    pub commit_latency: Histogram,
    /// How long the same records waited until an fsync made them durable.
    /// Exact in sum and count; within a write batch the counts are spread
    /// evenly between its oldest and newest record.
    pub durable_latency: Histogram,
}

/// The changelog, opened for writing by this process.
///
/// `Log` is `Send + Sync`: share it behind an `Arc` and append from any
/// number of threads. Dropping it flushes and syncs what was appended; use
/// [`Log::close`] to see errors from that.
#[derive(Debug)]
pub struct Log {
    pub(crate) inner: Arc<Inner>,
    committer: Option<JoinHandle<()>>,
    recovery: RecoveryReport,
    /// The directory's writer lock, held until the committer has stopped.
    /// Here rather than in the state readers share, so that a live reader
    /// that outlives its `Log` does not keep the directory locked.
    lock: Option<std::fs::File>,
}

impl Log {
    /// Opens (creating if needed) the log in `dir`, recovering its tail.
    ///
    /// Takes an exclusive lock on `dir/LOCK`; readers in other processes need
    /// no lock (see [`Reader::open_dir`]).
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Log> {
        opts.validate()?;
        // The record clock calibrates its counter once per process (under
        // a millisecond); here rather than in the first append.
        crate::clock::start();
        let dir = dir.as_ref().to_path_buf();
        let fs = opts.fs.clone();
        fs.create_dir_all(&dir)
            .map_err(|e| Error::io("create directory", &dir, e))?;
        let lock = take_lock(&dir)?;
        let incarnation = crate::incarnation::load_or_create(&*fs, &dir)?;
        let rec = recovery::recover(&*fs, &dir, &opts)?;
        let mut consumers = Consumers::load(&*fs, &dir)?;
        let next = rec.next_index;
        let moved = consumers.clamp_to(next - 1);
        if !moved.is_empty() {
            tracing::warn!(consumers = ?moved, last = next - 1, "consumer cursors were past the recovered end; moved back");
            consumers.save(&*fs).map_err(|f| {
                let path = f.path;
                let e = f.cause.into_source();
                Error::io("write", path, e)
            })?;
        }
        let inner = Arc::new(Inner {
            max_record: opts.max_record(),
            ring: Ring::new(opts.ring_slots, next),
            signals: Signals::new(next - 1),
            health: Health::default(),
            catalog: Catalog::new(rec.segments, next),
            consumers: ConsumerStore::new(consumers),
            counters: Counters::default(),
            dir,
            incarnation,
            opts,
        });
        let handle = commit::spawn(inner.clone(), rec.active)
            .map_err(|e| Error::io("spawn committer", &inner.dir, e))?;
        Ok(Log {
            inner,
            committer: Some(handle),
            recovery: rec.report,
            lock: Some(lock),
        })
    }

    /// What recovery found when the log was opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The log directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The log's incarnation: with an index, it names one record across
    /// every history the directory may have (see [`Incarnation`]).
    pub fn incarnation(&self) -> Incarnation {
        self.inner.incarnation
    }

    /// The retention limits and floor the log was opened with.
    pub fn retention(&self) -> &Retention {
        &self.inner.opts.retention
    }

    /// Appends a record. Returns once it has its index and its place in the
    /// order; it reaches the OS within the flush interval.
    #[inline]
    pub fn append(&self, r: &Record<'_>) -> Result<Appended> {
        self.inner.append(r).map(Appended)
    }

    /// Checks a record as [`Log::append`] does before it takes an index
    /// (the codec's limits, and room in one segment of this log), without
    /// appending it: a caller with several records checks them all
    /// before appending any.
    pub fn check(&self, r: &Record<'_>) -> Result<()> {
        self.inner.encoded_len(r).map(drop)
    }

    /// Appends a record and returns only after it is fsynced.
    pub fn append_durable(&self, r: &Record<'_>) -> Result<Durable> {
        let a = self.append(r)?;
        self.wait_durable(a)
    }

    /// Waits until an appended record is fsynced. After an error the record
    /// is still queued; waiting again may succeed once the cause is gone.
    pub fn wait_durable(&self, a: Appended) -> Result<Durable> {
        self.inner.wait_durable(a.0).map(|()| Durable(a.0))
    }

    /// Makes every record appended so far durable. Returns the durable
    /// index, or `None` if the log is empty.
    pub fn sync(&self) -> Result<Option<Durable>> {
        let last = self.inner.ring.next() - 1;
        if last == 0 {
            return Ok(None);
        }
        self.inner.wait_durable(last)?;
        Ok(Some(Durable(last)))
    }

    /// The last durable index: records up to it survive a crash of the
    /// host, so only these may leave it (a shipper's rule).
    pub fn durable_index(&self) -> u64 {
        self.inner.signals.durable()
    }

    /// Waits until every record up to `index`, one a reader has seen,
    /// is durable.
    pub fn wait_durable_index(&self, index: u64) -> Result<()> {
        let next = self.inner.ring.next();
        if index >= next {
            return Err(Error::NotAppended { index, next });
        }
        self.inner.wait_durable(index)
    }

    /// Asks the committer to make every record up to `index` durable
    /// with its next commit, and returns at once: for a caller that waits
    /// its own way (an async task watching [`Log::durable_index`]), where
    /// a durable wait would hold a thread, polling, for each request.
    pub fn request_durable(&self, index: u64) -> Result<()> {
        let next = self.inner.ring.next();
        if index >= next {
            return Err(Error::NotAppended { index, next });
        }
        if self.inner.signals.durable() < index {
            self.inner.signals.want_durable(index);
            self.inner.signals.kick();
        }
        Ok(())
    }

    /// The last index readers can see.
    pub fn last_index(&self) -> u64 {
        self.inner.last_committed()
    }

    /// The last index handed out by `append`: at or past
    /// [`Log::last_index`], as records between the two are on their way
    /// to readers (within the flush interval).
    pub fn last_appended(&self) -> u64 {
        self.inner.ring.next() - 1
    }

    /// The oldest index still in the log.
    pub fn first_index(&self) -> u64 {
        self.inner.catalog.first_index()
    }

    /// Reads committed records from `from` on.
    pub fn reader(&self, from: u64) -> Reader {
        Reader::live(self.inner.clone(), from, None)
    }

    /// Counters and sizes.
    pub fn stats(&self) -> Stats {
        // Read before the catalog's lock, which a roll waits for.
        let spare_bytes = self.spare_bytes();
        let (segments, bytes) = self.inner.catalog.count_and_bytes();
        let k = &self.inner.counters;
        Stats {
            first_index: self.first_index(),
            last_index: self.last_index(),
            durable_index: self.inner.signals.durable(),
            segments,
            bytes,
            spare_bytes,
            commits: k.commits.load(Ordering::Relaxed),
            syncs: k.syncs.load(Ordering::Relaxed),
            bytes_written: k.bytes_written.load(Ordering::Relaxed),
            write_errors: k.write_errors.load(Ordering::Relaxed),
            evictions: k.evictions.load(Ordering::Relaxed),
            ring_full_waits: k.ring_full.load(Ordering::Relaxed),
            lifted: k.lifted.load(Ordering::Relaxed),
            spilled: k.spilled.load(Ordering::Relaxed),
            group_commit_waits: k.group_waits.load(Ordering::Relaxed),
            group_commit_deadlines: k.group_deadlines.load(Ordering::Relaxed),
            durable_waits: self.inner.signals.durable_entries(),
            durable_sleeps: k.durable_sleeps.load(Ordering::Relaxed),
            durable_poll_shuts: self.inner.signals.poll_shuts(),
            consumers: self.inner.consumers.lock().list().len(),
            committer_cpu_ns: self.committer_cpu_ns(),
            commit_latency: k.commit_latency.snapshot(),
            durable_latency: k.durable_latency.snapshot(),
        }
    }

    /// The spare's length, read from the directory: the committer and its
    /// short-lived thread make, rename and remove it.
    fn spare_bytes(&self) -> u64 {
        crate::spare::on_disk(&*self.inner.opts.fs, &self.inner.dir).unwrap_or_else(|e| {
            tracing::debug!(dir = %self.inner.dir.display(), error = %e, "reading the spare segment's length failed");
            0
        })
    }

    fn committer_cpu_ns(&self) -> Option<u64> {
        // A stopped thread's id may already name another thread.
        if self.inner.health.committer_stopped() {
            return None;
        }
        crate::thread_cpu::of_thread(self.inner.signals.committer_tid()?)
    }

    /// Whether an fsync failure has poisoned the log.
    pub fn is_poisoned(&self) -> bool {
        self.inner.health.is_poisoned()
    }

    /// Flushes and syncs everything appended, then stops the committer.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        let Some(h) = self.committer.take() else {
            return Ok(());
        };
        self.inner.health.close();
        self.inner.signals.kick();
        let _ = h.join();
        self.lock = None;
        if self.inner.health.is_poisoned() {
            return Err(Error::Poisoned);
        }
        if !commit::finished(&self.inner) {
            return Err(self.inner.failure_error());
        }
        Ok(())
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::error!(dir = %self.inner.dir.display(), error = %e, "closing the log failed");
        }
    }
}

fn take_lock(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join(LOCK_FILE);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io("open", &path, e))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            return Err(Error::Locked {
                path: dir.to_path_buf(),
                holder,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("lock", &path, e)),
    }
    f.set_len(0).map_err(|e| Error::io("write", &path, e))?;
    std::io::Write::write_all(&mut &f, format!("{}\n", std::process::id()).as_bytes())
        .map_err(|e| Error::io("write", &path, e))?;
    Ok(f)
}

mod consumers;
mod draft;
pub(crate) mod health;
mod poll;
mod signals;
#[cfg(test)]
mod tests;
