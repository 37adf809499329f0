//! The group-commit stage: one thread that moves records from the ring to
//! the active segment, writes them, and syncs when asked.
//!
//! It writes the first record after an idle spell at once, then gathers for
//! up to the flush interval (or until the ring is half full, or a durable
//! waiter asks), so a burst costs one write and at most one fsync. A write
//! error keeps the unwritten bytes and retries with backoff; an fsync error
//! poisons the log, because the kernel may already have dropped the pages.
//!
//! When a writer holds a hole (reserved, not yet published: typically it was
//! preempted) for over a millisecond, the committer lifts the frames
//! published beyond it into a bounded reorder area, freeing their slots, so
//! the other writers keep appending while the hole's owner waits for a CPU.
//!
//! How it waits (for work, and for durable writers before an fsync) is in
//! `wait`.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_utils::Backoff;

use crate::active::{ActiveSegment, IoFail};
use crate::catalog::SegEntry;
use crate::codec;
use crate::last_of_type::LastOfType;
use crate::latency::pending::Pending;
use crate::log::health::Poison;
use crate::log::{Inner, now_ns};
use crate::options::Preallocation;
use crate::retention;
use crate::spare::Spares;

mod wait;

/// Largest batch gathered before it is written, bounding committer memory.
const MAX_BATCH: usize = 8 << 20;
/// How often retention runs when nothing else wakes the committer.
const MAINTENANCE: Duration = Duration::from_millis(500);
const RETRY_MIN: Duration = Duration::from_millis(20);
const RETRY_MAX: Duration = Duration::from_secs(1);
/// How long a hole may hold the committer before it lifts past it, and
/// how often it lifts again while the hole stays.
pub(crate) const HOLE_PATIENCE: Duration = Duration::from_millis(1);
/// How long the committer sleeps at a time while a durable waiter waits
/// on a hole, once its backoff has spun: the hole's writer was preempted,
/// and spinning would take the CPU it needs to finish.
const HOLE_NAP: Duration = Duration::from_micros(50);
/// Bytes the reorder area may hold per ring slot: three laps of typical
/// records.
const REORDER_BYTES_PER_SLOT: u64 = 384;

pub(crate) fn spawn(
    inner: Arc<Inner>,
    active: Option<ActiveSegment>,
) -> io::Result<JoinHandle<()>> {
    // Made here rather than in the thread, so that the log is fully set up
    // (a kept spare taken back, for one) when `Log::open` returns.
    let committer = Committer::new(inner.clone(), active);
    let h = thread::Builder::new()
        .name("weir-log-commit".into())
        .spawn({
            let inner = inner.clone();
            move || {
                inner
                    .signals
                    .set_committer_tid(rustix::thread::gettid().as_raw_nonzero().get());
                let _stopped = Stopped(inner);
                committer.run()
            }
        })?;
    inner.signals.set_committer(h.thread().clone());
    Ok(h)
}

/// Marks the committer as stopped however its thread ends. A committer that
/// stops while the log is open (a panic, which is a bug) poisons the log,
/// so writers and durable waiters get an error instead of waiting forever.
struct Stopped(Arc<Inner>);

impl Drop for Stopped {
    fn drop(&mut self) {
        let inner = &self.0;
        if !inner.health.is_closing() {
            inner.poison(Poison::CommitterStopped);
        }
        inner.health.set_committer_stopped();
        inner.signals.wake_all();
    }
}

/// Whether every reserved record has been committed durably.
pub(crate) fn finished(inner: &Inner) -> bool {
    inner.signals.durable() + 1 >= inner.ring.next()
}

struct Committer {
    inner: Arc<Inner>,
    active: Option<ActiveSegment>,
    last_sync: Instant,
    /// When records were last gathered: a steady stream keeps the
    /// committer on its flush timer instead of waking it per record.
    last_gather: Instant,
    last_maintenance: Instant,
    retry: Option<(Instant, Duration)>,
    marks: retention::PendingMarks,
    /// Retention's looks past records masks exclude, between passes.
    unwanted_scans: retention::UnwantedScans,
    /// The last index placed of each type, which spares most of those
    /// looks.
    last_of_type: LastOfType,
    /// Frames lifted out of the ring past a hole, by index, until the
    /// hole is filled and they can be placed in order.
    reorder: BTreeMap<u64, Vec<u8>>,
    reorder_bytes: u64,
    /// The hole the last gather stopped at, and since when.
    stuck_at: Option<(u64, Instant)>,
    /// Durable waits begun (`Signals::durable_entries`) when the batch being
    /// written was gathered, and when the one before it was.
    entries_gathered: u64,
    entries_before: u64,
    /// How many durable waits the last fsync satisfied, the count of waits
    /// begun when it published. What it cost is `Signals::sync_cost`.
    woken: u64,
    entries_at_wake: u64,
    /// Append times of what waits to be written or fsynced, for the
    /// latency histograms.
    pending: Pending,
    /// The next segment's zero-filled file, and when to make and use it.
    spares: Spares,
}

enum Outcome {
    /// Something was written (or nothing was pending).
    Progress,
    /// The commit failed and will be retried.
    Failed,
    /// The log is poisoned; stop.
    Poisoned,
}

impl Committer {
    fn new(inner: Arc<Inner>, active: Option<ActiveSegment>) -> Self {
        let opts = &inner.opts;
        let zero_fill = match opts.preallocation {
            Preallocation::Reserve => false,
            Preallocation::ZeroFill => true,
            Preallocation::Auto => opts.fs.overwrites_in_place(&inner.dir).unwrap_or(false),
        };
        let spares = Spares::open(&*opts.fs, &inner.dir, zero_fill, opts.segment_size);
        let last_of_type = LastOfType::new(inner.ring.taken());
        // An open is an idle spell like any other: the first record after
        // it is written at once, not after a flush interval.
        let last_gather = Instant::now()
            .checked_sub(opts.flush_interval)
            .unwrap_or_else(Instant::now);
        let marks = retention::PendingMarks::owed_at_open(&inner.consumers.lock());
        Committer {
            inner,
            active,
            last_sync: Instant::now(),
            last_gather,
            last_maintenance: Instant::now(),
            retry: None,
            marks,
            unwanted_scans: retention::UnwantedScans::default(),
            last_of_type,
            reorder: BTreeMap::new(),
            reorder_bytes: 0,
            stuck_at: None,
            entries_gathered: 0,
            entries_before: 0,
            woken: 0,
            entries_at_wake: 0,
            pending: Pending::default(),
            spares,
        }
    }

    fn run(mut self) {
        loop {
            let closing = self.inner.health.is_closing();
            if !closing {
                self.wait_for_work();
            }
            if let Some((at, _)) = self.retry {
                let now = Instant::now();
                if now < at && !closing {
                    thread::park_timeout(at - now);
                    continue;
                }
            }
            match self.cycle(closing) {
                Outcome::Poisoned => break,
                Outcome::Failed => {
                    if closing && self.retry.is_some_and(|(_, d)| d >= RETRY_MAX) {
                        // Give up on close after backing off to the maximum;
                        // `close` reports the error.
                        break;
                    }
                    if closing {
                        thread::sleep(self.retry.map_or(RETRY_MIN, |(_, d)| d));
                    }
                }
                Outcome::Progress => {}
            }
            if self.last_maintenance.elapsed() >= MAINTENANCE || closing {
                self.maintain();
            }
            if closing && finished(&self.inner) && self.marks.is_empty() {
                // After the last check that nothing is left to write: the
                // seal must append nothing (tests hold the close here).
                fail_point!("weir_log::close::sealing");
                self.seal_on_close();
                break;
            }
        }
        // A spare is kept only by a close that leaves the log sound.
        let keep = !self.inner.health.is_poisoned() && self.retry.is_none();
        self.spares
            .close(&*self.inner.opts.fs, &self.inner.dir, keep);
        self.wake_all();
    }

    /// A clean close seals the active segment, so a closed log holds no
    /// unused preallocation and the next open starts a fresh segment. An
    /// active segment without records is left as it is, and the next open
    /// appends to it: sealed, it would hold the next segment's name, and
    /// removed, it could take with it the only record of the next index
    /// (retention may have removed every older segment).
    fn seal_on_close(&mut self) {
        let inner = self.inner.clone();
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if active.next_index() == active.base {
            return;
        }
        // The records are durable already either way; the next open seals
        // the segment instead. No retention pass after it, as a roll makes:
        // the close loop has checked that nothing is left to write, and a
        // MARK the pass appended would never be.
        match self.seal_active() {
            Ok(()) => {}
            // Still an fsync failure: the log is poisoned, so that close
            // reports it and keeps no spare.
            Err(f @ IoFail::Sync(_)) => {
                self.failed(f);
            }
            Err(f) => {
                tracing::warn!(dir = %inner.dir.display(), error = ?f, "sealing on close failed");
            }
        }
    }

    /// Records still in the ring, awaiting the committer.
    fn pending(&self) -> u64 {
        let ring = &self.inner.ring;
        // Saturating: a spill reserved after `next` was read may be counted.
        (ring.next() - ring.taken()).saturating_sub(self.reorder.len() as u64 + ring.spilled())
    }

    /// Whether the next record in order can be placed now: published in
    /// its slot or the spill map, or lifted. [`Committer::pending`] leaves
    /// out lifted and spilled frames, which wait behind a hole; once the
    /// hole is filled, the one at the head is work all the same.
    fn head_ready(&self) -> bool {
        let ring = &self.inner.ring;
        let taken = ring.taken();
        taken < ring.next()
            && (self
                .reorder
                .first_key_value()
                .is_some_and(|(&k, _)| k == taken)
                || ring.is_published(taken))
    }

    /// Since when the last gather has waited on a hole at the head of the
    /// ring, if the hole is still there.
    fn stuck_at_head(&self) -> Option<Instant> {
        match self.stuck_at {
            Some((at, since)) if at == self.inner.ring.taken() && !self.head_ready() => Some(since),
            _ => None,
        }
    }

    fn cycle(&mut self, closing: bool) -> Outcome {
        let inner = self.inner.clone();
        // Poisoned elsewhere: by an fsync of the consumer state or of the
        // directory after retention.
        if inner.health.is_poisoned() {
            return Outcome::Poisoned;
        }
        self.gather_waiters();
        // The waits begun by now are (nearly all) for records this batch
        // takes: a writer announces what it wants right after.
        let entries = inner.signals.durable_entries();
        let wanted = inner.signals.durable_wanted();
        let must_reach = if closing {
            inner.ring.next() - 1
        } else {
            wanted
        };
        if let Err(f) = self.gather(must_reach) {
            return self.failed(f);
        }
        let Some(active) = self.active.as_mut() else {
            return Outcome::Progress;
        };
        let placed_to = active.next_index() - 1;
        let sync_due = inner
            .opts
            .sync_interval
            .is_some_and(|d| self.last_sync.elapsed() >= d);
        let durable_now = inner.signals.durable();
        let need_sync = placed_to > durable_now && (wanted > durable_now || closing || sync_due);
        if need_sync {
            active.pad();
            self.entries_before = std::mem::replace(&mut self.entries_gathered, entries);
        }
        if active.has_unwritten() {
            let before = active.written();
            let r = active.write();
            let n = active.written() - before;
            inner.counters.bytes_written.fetch_add(n, Ordering::Relaxed);
            if let Err(e) = r {
                return self.failed(IoFail::Write(e));
            }
            inner.counters.commits.fetch_add(1, Ordering::Relaxed);
        }
        self.retry = None;
        self.prepare_spare();
        if inner.health.write_succeeded() {
            tracing::info!(dir = %inner.dir.display(), "log writes recovered");
        }
        self.publish_committed(placed_to);
        if need_sync {
            let active = self.active.as_ref().expect("checked above");
            let start = Instant::now();
            if let Err(e) = active.sync() {
                return self.failed(IoFail::Sync(e));
            }
            inner.signals.set_sync_cost(start.elapsed());
            inner.counters.syncs.fetch_add(1, Ordering::Relaxed);
            self.publish_durable(placed_to);
            self.spares.synced(self.last_sync);
        }
        if self.spares.roll_early()
            && let Err(f) = self.roll()
        {
            return self.failed(f);
        }
        Outcome::Progress
    }

    /// Moves published records from the ring into the active segment,
    /// rolling segments as they fill. Waits for records up to `must_reach`.
    fn gather(&mut self, must_reach: u64) -> Result<(), IoFail> {
        let inner = self.inner.clone();
        let ring = &inner.ring;
        let mut idx = ring.taken();
        let end = ring.next();
        let backoff = Backoff::new();
        let mut gathered = 0usize;
        let mut last_lift: Option<Instant> = None;
        while idx < end && gathered < MAX_BATCH {
            if self.active.is_none() {
                self.open_segment(idx)?;
            }
            let active = self.active.as_mut().expect("opened above");
            let pending = &mut self.pending;
            let last_of_type = &mut self.last_of_type;
            let mut place = |frame: &[u8]| {
                if active.fits(frame.len()) {
                    // Writers built the frame, so its header is trusted.
                    let head = codec::trusted_frame(frame);
                    active.push(frame, idx, head.time_ns);
                    pending.placed(head.time_ns);
                    last_of_type.note(head.kind, idx);
                    Some(frame.len())
                } else {
                    None
                }
            };
            let took = match self.reorder.first_entry() {
                Some(e) if *e.key() == idx => {
                    let placed = place(e.get());
                    if placed.is_some() {
                        self.reorder_bytes -= e.remove().len() as u64;
                    }
                    Some(placed)
                }
                _ => ring.take(idx, place),
            };
            match took {
                Some(Some(n)) => {
                    idx += 1;
                    gathered += n;
                    backoff.reset();
                    if idx.is_multiple_of(1024) {
                        self.release(idx);
                    }
                }
                Some(None) => {
                    self.release(idx);
                    self.roll()?;
                }
                // A writer holds the index but has not published yet; wait
                // for it only if a durable waiter or close needs it.
                None => {
                    // Lift only past a hole older than HOLE_PATIENCE (its
                    // writer was likely preempted; one in the middle of
                    // its copy fills it a moment later), and only once the
                    // ring is half taken: until then the writers have room,
                    // and waiting costs nothing while lifting copies every
                    // frame after the hole around. With 16 writers on 2
                    // CPUs, lifting at every stale hole moved 15% of all
                    // records through the reorder area. At most once per
                    // HOLE_PATIENCE while a durable waiter holds the
                    // committer here, so that it does not rescan the ring
                    // on every turn, yet lifts what the other writers
                    // publish meanwhile: once per gather left them to fill
                    // the ring and wait for the hole.
                    let since = match self.stuck_at {
                        Some((at, since)) if at == idx => since,
                        _ => {
                            let now = Instant::now();
                            self.stuck_at = Some((idx, now));
                            now
                        }
                    };
                    if last_lift.is_none_or(|t| t.elapsed() >= HOLE_PATIENCE)
                        && since.elapsed() >= HOLE_PATIENCE
                        && self.crowded()
                    {
                        self.lift_past(idx, ring.next());
                        last_lift = Some(Instant::now());
                    }
                    if idx > must_reach {
                        break;
                    }
                    if backoff.is_completed() {
                        thread::park_timeout(HOLE_NAP);
                    } else {
                        backoff.snooze();
                    }
                }
            }
        }
        self.release(idx);
        if gathered > 0 {
            self.last_gather = Instant::now();
        }
        Ok(())
    }

    /// Whether writers could soon find their slot taken: half the ring is
    /// reserved and not yet taken, or a writer already waits for room.
    fn crowded(&self) -> bool {
        let ring = &self.inner.ring;
        ring.next() - ring.taken() >= ring.capacity() / 2 || self.inner.signals.space_wanted()
    }

    /// Lifts the frames published in `(hole, end)` into the reorder area,
    /// up to its bound, and lets writers waiting for room retry.
    fn lift_past(&mut self, hole: u64, end: u64) {
        let ring = &self.inner.ring;
        let limit = REORDER_BYTES_PER_SLOT * ring.capacity();
        // Rescanning from the hole also catches later holes filled since;
        // a slot already lifted no longer holds its index, so it is skipped.
        // It runs at most once per gather, and stops at once when the area
        // is full, so the scan costs a few loads per appended record.
        let mut lifted = 0u64;
        for i in hole + 1..end {
            if self.reorder_bytes >= limit {
                break;
            }
            if let Some(frame) = ring.lift(i) {
                self.reorder_bytes += frame.len() as u64;
                self.reorder.insert(i, frame);
                lifted += 1;
            }
        }
        if lifted > 0 {
            self.inner
                .counters
                .lifted
                .fetch_add(lifted, Ordering::Relaxed);
            self.wake_space_waiters();
        }
    }

    fn release(&self, upto: u64) {
        // Only freed slots are news to a writer waiting for room. Woken for
        // nothing behind a hole, it kicked the committer, whose gather
        // released nothing and woke it again: the two took turns on the
        // CPUs the hole's writer was waiting for.
        if upto > self.inner.ring.taken() {
            self.inner.ring.release(upto);
            self.wake_space_waiters();
        }
    }

    fn wake_space_waiters(&self) {
        self.inner.signals.wake_space_waiters();
    }

    fn prepare_spare(&mut self) {
        let (inner, active) = (&self.inner, &self.active);
        if let Some(a) = active {
            let opts = &inner.opts;
            self.spares
                .maybe_start(&opts.fs, &inner.dir, opts.segment_size, a.written());
        }
    }

    fn open_segment(&mut self, base: u64) -> Result<(), IoFail> {
        let inner = &self.inner;
        let opts = &inner.opts;
        let spare = self.spares.take_for_segment(&inner.dir);
        let a = ActiveSegment::create(
            &*opts.fs,
            &inner.dir,
            base,
            opts.segment_size,
            opts.max_data_end(),
            now_ns(),
            spare,
        )?;
        inner.catalog.push(SegEntry {
            base,
            path: a.path.clone(),
            last: None,
            bytes: opts.segment_size,
            last_time_ns: 0,
            time_read: false,
        });
        self.active = Some(a);
        Ok(())
    }

    fn roll(&mut self) -> Result<(), IoFail> {
        self.seal_active()?;
        // Retention after every roll, not only between batches, so that a
        // burst never takes the log more than a segment past its limit.
        self.maintain();
        Ok(())
    }

    /// Seals the active segment and publishes its records as durable.
    fn seal_active(&mut self) -> Result<(), IoFail> {
        let inner = self.inner.clone();
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let last = active.next_index() - 1;
        let before = active.written();
        let sealed = active.seal(&*inner.opts.fs, &inner.dir);
        let n = active.written() - before;
        inner.counters.bytes_written.fetch_add(n, Ordering::Relaxed);
        let bytes = sealed?;
        inner.counters.syncs.fetch_add(1, Ordering::Relaxed);
        let (base, time) = (active.base, active.last_time_ns());
        self.active = None;
        inner.catalog.seal(base, last, bytes, time);
        self.publish_committed(last);
        self.publish_durable(last);
        Ok(())
    }

    fn publish_committed(&mut self, upto: u64) {
        let inner = &self.inner;
        // Counted before the index is published: whoever sees a record
        // committed sees its latency in the stats.
        self.pending
            .committed(upto, now_ns(), &inner.counters.commit_latency);
        inner.signals.publish_committed(upto);
    }

    fn publish_durable(&mut self, upto: u64) {
        let inner = &self.inner;
        self.last_sync = Instant::now();
        self.pending
            .durable(upto, now_ns(), &inner.counters.durable_latency);
        self.woken = self.entries_gathered - self.entries_before;
        self.entries_at_wake = inner.signals.publish_durable(upto);
    }

    fn failed(&mut self, f: IoFail) -> Outcome {
        let inner = &self.inner;
        let (err, poison) = match &f {
            IoFail::Write(e) => (e, false),
            IoFail::Sync(e) => (e, true),
        };
        if poison {
            inner.poison(Poison::Fsync(err, "segment"));
            return Outcome::Poisoned;
        }
        inner.health.write_failed(err);
        inner.counters.write_errors.fetch_add(1, Ordering::Relaxed);
        let delay = self
            .retry
            .map_or(RETRY_MIN, |(_, d)| (d * 2).min(RETRY_MAX));
        if self.retry.is_none() {
            tracing::warn!(dir = %inner.dir.display(), error = %err, "log write failed; records stay queued and are retried");
        }
        self.retry = Some((Instant::now() + delay, delay));
        self.wake_all();
        Outcome::Failed
    }

    fn wake_all(&self) {
        self.inner.signals.wake_all();
    }

    fn maintain(&mut self) {
        self.last_maintenance = Instant::now();
        if self.inner.health.is_poisoned() {
            return;
        }
        let inner = &self.inner;
        let size = inner.opts.segment_size;
        // Between a roll and the next gather, records waiting in the ring
        // are about to open the next segment: counted now, so that the
        // pass after a roll leaves room for it.
        let waiting = inner.ring.next() - 1 > inner.signals.committed();
        let opening = if self.active.is_none() && waiting {
            size
        } else {
            0
        };
        let reserve = self.spares.reserve(size);
        let active = self.active.as_ref();
        let seek = |index: u64| {
            let a = active.filter(|a| index >= a.base)?;
            let (offset, at) = a.seek(index);
            Some((a.base, offset, at))
        };
        let fits = retention::run(
            inner,
            &mut self.marks,
            &mut self.unwanted_scans,
            &self.last_of_type,
            &seek,
            opening,
            reserve,
        );
        self.spares.set_room(&*inner.opts.fs, &inner.dir, fits);
    }
}
