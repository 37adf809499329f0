//! Retention: deleting segments nobody needs, and the policies that apply
//! when consumers lag or go idle.
//!
//! Runs on the committer thread between commits. It never deletes the
//! newest segment, whose name tells recovery the next index, and keeps
//! the newest history that every consumer has cleared while the floor
//! (`Retention::keep_bytes`, `keep_age`) holds it. Evictions and
//! forced drops are announced with MARK records, appended without waiting so
//! that retention can never block on the ring it drains; an eviction's only
//! once the consumer state that lacks the consumer is saved. The state
//! lists each announcement as owed until its MARK is durable (see
//! `announce`).
//!
//! A pass has three steps. It gathers what the policy needs: consumers
//! moved past what their masks exclude, since when a record has waited
//! for each, the age of old segments (for the age limit or the floor).
//! `plan` then decides, from those alone, whom to evict and what to
//! remove. `apply` does it: the evictions and drops in the consumer set,
//! the save, the removals and the MARKs, the I/O going through
//! [`Effects`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use crate::announce::{Announcement, Reason};
use crate::catalog::SegEntry;
use crate::cursors::{Consumer, Consumers};
use crate::last_of_type::LastOfType;
use crate::log::health::Poison;
use crate::log::{Inner, now_ns};
use crate::options::Retention;
use crate::reader::Reader;
use crate::segment::Footer;
use plan::{Cursor, Inputs, Plan};

/// A MARK record to write.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    ann: Announcement,
    /// An eviction, until the consumer state without the consumer is
    /// saved: the count of saves when it was made, and the consumer. Its
    /// MARK waits for the save, for a crash before it brings the consumer
    /// back on reopen, and the log must not have announced otherwise.
    unsaved: Option<(u64, Consumer)>,
}

/// MARK records waiting for room in the ring, or for the save of the
/// evictions they announce; and those written, until they are durable.
#[derive(Debug, Default)]
pub(crate) struct PendingMarks {
    queue: VecDeque<Mark>,
    /// Written MARKs and their indexes: owed in the consumer state until
    /// the log is durable through them.
    written: Vec<(Announcement, u64)>,
}

impl PendingMarks {
    /// The announcements a log opens owing: the state lists them, so
    /// their MARKs may have been lost. Written again, as any other.
    pub(crate) fn owed_at_open(consumers: &Consumers) -> PendingMarks {
        let queue = consumers
            .owed()
            .iter()
            .map(|a| {
                tracing::info!(event = ?a.event, consumer = %a.consumer, through = a.through, "announcing again a MARK that may not have been durable");
                Mark {
                    ann: a.clone(),
                    unsaved: None,
                }
            })
            .collect();
        PendingMarks {
            queue,
            written: Vec::new(),
        }
    }

    /// Whether no MARK waits to be written or to be durable.
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.written.is_empty()
    }

    /// Whether an eviction waits for the consumer state to be saved.
    fn awaiting_save(&self) -> bool {
        self.queue.iter().any(|m| m.unsaved.is_some())
    }

    /// Queues an eviction's MARK, owed from the save without `c` on.
    fn evicted(&mut self, consumers: &mut Consumers, c: Consumer, reason: Reason, last: u64) {
        tracing::warn!(consumer = %c.name, id = c.id, cleared = c.cleared, lag = last - c.cleared.min(last), reason = reason.as_str(), "evicting consumer");
        let ann = Announcement::eviction(&c, reason, last);
        consumers.owe(ann.clone());
        let saves = consumers.saves();
        self.queue.push_back(Mark {
            ann,
            unsaved: Some((saves, c)),
        });
    }

    /// Queues the MARK of a segment dropped through `through` while the
    /// lowest cleared index was `cleared`, owed from the next save on.
    fn dropped(&mut self, consumers: &mut Consumers, cleared: u64, through: u64) {
        let ann = Announcement::segment_dropped(cleared, through);
        consumers.owe(ann.clone());
        self.queue.push_back(Mark { ann, unsaved: None });
    }

    /// Lets go the MARKs of the evictions made before the last of `saves`
    /// saves: the file on disk lacks those consumers.
    fn saved(&mut self, saves: u64) {
        let mut released = false;
        for m in &mut self.queue {
            if m.unsaved.as_ref().is_some_and(|(at, _)| *at < saves) {
                m.unsaved = None;
                released = true;
            }
        }
        if released {
            // Tests crash here: the eviction is on disk, its MARK not.
            fail_point!("weir_log::retention::eviction_saved");
        }
    }

    /// Takes the MARKs durable through `durable` off the owed list.
    /// Returns whether any was.
    fn settle(&mut self, consumers: &mut Consumers, durable: u64) -> bool {
        let before = self.written.len();
        self.written.retain(|(a, index)| {
            let done = *index <= durable;
            if done {
                consumers.settle(a);
            }
            !done
        });
        self.written.len() != before
    }

    /// Takes back the evictions the log closes without saving: the file
    /// still names those consumers, so they are put back in memory (a
    /// later save of the closing log must not drop them unannounced), and
    /// nothing announces them gone.
    fn forget_unsaved(&mut self, consumers: &mut Consumers) {
        for m in std::mem::take(&mut self.queue) {
            match m.unsaved {
                Some((_, c)) => {
                    consumers.settle(&m.ann);
                    consumers.restore(c);
                }
                None => self.queue.push_back(m),
            }
        }
    }
}

/// One retention pass: gathers what the plan needs, plans (see `plan`),
/// and applies the plan through [`Effects`]. `opening` is the size of a
/// segment about to be opened (after a roll, for the records waiting in
/// the ring), which counts as made. `reserve` is the room the spare
/// segment takes or would take (zero without zero fill): it counts towards
/// the size limit like a segment, so segments nobody needs are deleted to
/// make it, but a consumer is never evicted (nor its data dropped) for it.
/// Returns whether the spare fits under the limit.
pub(crate) fn run(
    inner: &Arc<Inner>,
    marks: &mut PendingMarks,
    scans: &mut UnwantedScans,
    types: &LastOfType,
    seek: UnsealedSeek<'_>,
    opening: u64,
    reserve: u64,
) -> bool {
    let now = now_ns();
    let last = inner.signals.committed();
    let ret = &inner.opts.retention;
    // Before the consumer lock: the reads open files.
    if ret.max_age.is_some() {
        read_segment_times(inner, u64::MAX);
    } else if ret.has_floor() && plan::nanos(ret.keep_age) != u64::MAX {
        // Only those the floor's size would keep need their age.
        read_segment_times(inner, ret.keep_bytes);
    }
    let mut consumers = inner.consumers.lock();
    let settled = marks.settle(&mut consumers, inner.signals.durable());

    // First past what masks exclude: such records neither hold a segment
    // for a consumer nor count as waiting for it.
    let unresolved = pass_unwanted(inner, &mut consumers, scans, types, seek, last);

    let lookups = waits_to_read(&consumers, &unresolved, ret, now, last);
    if !lookups.is_empty() {
        // The reads open the directory: not under the consumer lock, which
        // every consumer call waits for. A consumer that clears meanwhile
        // is active after `now` and not judged idle, and the wait read is
        // kept only for a consumer still at the index it was read for.
        drop(consumers);
        let found = read_waits(inner, &lookups);
        consumers = inner.consumers.lock();
        note_waits(&mut consumers, &found);
    }

    let segs = inner.catalog.snapshot();
    let plan = {
        let cursors: Vec<Cursor<'_>> = consumers
            .list()
            .iter()
            .map(|c| Cursor {
                name: &c.name,
                cleared: c.cleared,
                last_active_ns: c.last_active_ns,
                waiting_since: c
                    .waiting_since
                    .filter(|&(at, _)| at == c.cleared)
                    .map(|(_, t)| t),
                unresolved: unresolved.contains(&c.name),
            })
            .collect();
        plan::plan(&Inputs {
            cursors: &cursors,
            segments: &segs,
            limits: ret,
            now,
            last,
            opening,
            reserve,
        })
    };
    let pass = Pass {
        last,
        settled,
        closing: inner.health.is_closing(),
        max_bytes: ret.max_bytes,
    };
    apply(&**inner, consumers, marks, &plan, &segs, &pass)
}

/// What applying a plan does beyond the consumer set and the MARK queue:
/// the I/O, and what it leaves the log as. [`Inner`] is the log's.
pub(crate) trait Effects {
    /// Saves the consumer set. A failure is logged, and an fsync's poisons
    /// the log; the set stays dirty unless the file was replaced.
    fn save(&self, consumers: &mut Consumers);
    /// Counts an eviction, for `Stats`.
    fn count_eviction(&self);
    /// Whether the log is poisoned: nothing is removed then.
    fn poisoned(&self) -> bool;
    /// Takes segments out of the catalog, removes their files and syncs
    /// the directory.
    fn remove_segments(&self, doomed: &[SegEntry]);
    /// Appends a MARK without waiting for room, asking the next commit to
    /// make it durable. Its index, if it found room.
    fn append_mark(&self, a: &Announcement) -> Option<u64>;
}

impl Effects for Inner {
    fn save(&self, consumers: &mut Consumers) {
        if let Err(f) = consumers.save(&*self.opts.fs) {
            let (e, _) = self.consumers_not_saved(f);
            tracing::error!(error = %e, "saving consumer state failed; segments it would free stay until it is saved");
        }
    }

    fn count_eviction(&self) {
        self.counters.evictions.fetch_add(1, Ordering::Relaxed);
    }

    fn poisoned(&self) -> bool {
        self.health.is_poisoned()
    }

    fn remove_segments(&self, doomed: &[SegEntry]) {
        self.catalog.remove(doomed);
        let fs = &*self.opts.fs;
        for s in doomed {
            if let Err(e) = fs.remove(&s.path) {
                tracing::warn!(segment = %s.path.display(), error = %e, "removing segment failed");
            }
        }
        // Any fsync failure poisons the log, this one too: the directory's
        // other changes since (a new segment's entry) could be lost with it.
        if let Err(e) = fs.sync_dir(&self.dir) {
            self.poison(Poison::Fsync(&e, "log directory after removing segments"));
        }
    }

    fn append_mark(&self, a: &Announcement) -> Option<u64> {
        let index = a.try_append(self)?;
        // Owed in the saved state until durable, and each open announces
        // again what is owed: so the next commit fsyncs it, rather than
        // the sync interval's, to keep that short.
        self.signals.want_durable(index);
        Some(index)
    }
}

/// What a pass knew besides its plan.
struct Pass {
    /// The last committed index, which evictions are announced at.
    last: u64,
    /// Whether MARKs became durable and were taken off the owed list.
    settled: bool,
    closing: bool,
    max_bytes: u64,
}

/// Applies `plan` to the consumer set under its lock, saves the set when
/// it must, then, with the lock released, removes what the saved state
/// allows and writes the MARKs that wait only for room. Returns whether
/// the spare fits (see [`run`]).
fn apply(
    fx: &impl Effects,
    mut consumers: MutexGuard<'_, Consumers>,
    marks: &mut PendingMarks,
    plan: &Plan,
    segs: &[SegEntry],
    pass: &Pass,
) -> bool {
    let mut changed = false;
    for (name, reason) in &plan.evict {
        if let Ok(c) = consumers.remove(name) {
            marks.evicted(&mut consumers, c, *reason, pass.last);
            fx.count_eviction();
            changed = true;
        }
    }
    for &(cleared, through) in &plan.drops {
        marks.dropped(&mut consumers, cleared, through);
    }
    // Saved before any segment goes: a consumer whose eviction, or whose
    // pass over unwanted records, a crash lost would come back reading
    // from a removed segment. Passes alone wait for a save that matters;
    // so does a settled MARK, but not long: until it is saved, a crash
    // announces it again.
    if consumers.dirty()
        && (changed
            || pass.settled
            || pass.closing
            || !plan.remove.is_empty()
            || marks.awaiting_save())
    {
        fx.save(&mut consumers);
    }
    // Once saved, all of them; else only what the file on disk allows
    // (on a full disk the save may need the room a removal frees), and
    // what the drop policy takes whatever consumers need.
    let on_disk = consumers.saved_min_cleared();
    let saved = !consumers.dirty();
    marks.saved(consumers.saves());
    if pass.closing && !saved {
        marks.forget_unsaved(&mut consumers);
    }
    let poisoned = fx.poisoned();
    drop(consumers);
    let doomed: Vec<SegEntry> = plan
        .remove
        .iter()
        .filter(|r| !poisoned && (saved || r.dropped || on_disk.is_none_or(|m| m >= r.last)))
        .filter_map(|r| segs.iter().find(|s| s.base == r.base).cloned())
        .collect();
    if !doomed.is_empty() {
        fx.remove_segments(&doomed);
    }
    flush_marks(fx, marks);
    doomed.len() == plan.remove.len() && plan.total <= pass.max_bytes
}

/// How many bytes of records one retention pass reads, over all consumers,
/// to pass them over what their masks exclude: about a millisecond of the
/// committer's time. A pass goes on from where the last one stopped.
const UNWANTED_SCAN_BYTES: u64 = 1 << 20;

/// How many consumers one pass looks past unwanted records for.
const UNWANTED_SCANS: usize = 64;

/// The looks past unwanted records in progress, by consumer id: each a
/// reader left where the last pass stopped, so that a look spread over
/// passes reads each record once. Kept by the committer between passes.
#[derive(Default)]
pub(crate) struct UnwantedScans(HashMap<u32, UnwantedScan>);

struct UnwantedScan {
    /// The cleared index the look started after (moved with the consumer
    /// as the look passes records).
    after: u64,
    reader: Reader,
}

impl UnwantedScan {
    /// A look from just after `c`'s cleared index, through the segment
    /// list in memory rather than a listing of the directory. The consumer
    /// lock is held, which comes before the catalog's (see `catalog`).
    fn new(inner: &Arc<Inner>, c: &Consumer, seek: UnsealedSeek<'_>) -> UnwantedScan {
        let from = c.cleared + 1;
        let mut reader = Reader::live(inner.clone(), from, Some(c.mask.clone()));
        if let Some((base, offset, index)) = seek(from) {
            reader = reader.start_unsealed_at(base, offset, index);
        }
        UnwantedScan {
            after: c.cleared,
            reader,
        }
    }
}

/// Where a reader finds an index in the unsealed segment, which has no
/// footer yet: `(base, offset, index)` from the writer's sparse index.
pub(crate) type UnsealedSeek<'a> = &'a dyn Fn(u64) -> Option<(u64, u64, u64)>;

/// Moves each consumer with a mask past the records after its cleared
/// index that the mask excludes, up to the first it reads or the end. It
/// would never read them, but they would hold segments for it, count in
/// its lag, and make it look idle; and it cannot clear past them itself
/// without reading a record past them. The moves are saved with the next
/// save (see `run`); one lost to a crash is made again.
///
/// A consumer that has read everything it wants goes straight to the end:
/// the committer's table of each type's last index says so without a read
/// (see `LastOfType`). The others are looked past by reading, within a
/// budget per pass: the furthest behind first, as they hold the most
/// segments, and one the budget leaves out this pass is first in a later
/// one, once the others have caught up. Only those have a record they
/// want ahead, or records from before the log was opened after them.
///
/// Returns the consumers whose look stopped at the budget or failed:
/// whether a record waits for them is not known yet.
fn pass_unwanted(
    inner: &Arc<Inner>,
    consumers: &mut Consumers,
    scans: &mut UnwantedScans,
    types: &LastOfType,
    seek: UnsealedSeek<'_>,
    last: u64,
) -> Vec<String> {
    let mut budget = UNWANTED_SCAN_BYTES;
    let mut slots = UNWANTED_SCANS;
    let mut unresolved = Vec::new();
    let mut moves = Vec::new();
    let ids: HashSet<u32> = consumers.list().iter().map(|c| c.id).collect();
    scans.0.retain(|id, _| ids.contains(id));
    let mut order: Vec<&mut Consumer> = consumers.list_mut().iter_mut().collect();
    order.sort_by_key(|c| c.cleared);
    for c in order {
        // A record it reads is known to wait at `cleared + 1`.
        let known = c.waiting_since.is_some_and(|(at, _)| at == c.cleared);
        // Records a size limit dropped under it cannot be read: such a
        // consumer is judged by their age, as any other, and takes no look.
        let dropped = c.cleared + 1 < inner.catalog.first_index();
        if c.mask.is_all() || c.cleared >= last || known || dropped {
            scans.0.remove(&c.id);
            continue;
        }
        // Read everything it wants: straight to the end, whatever the rate.
        if types.none_wanted_after(c.cleared, &c.mask) {
            moves.push((c.name.clone(), last));
            scans.0.remove(&c.id);
            continue;
        }
        if budget == 0 || slots == 0 {
            unresolved.push(c.name.clone());
            continue;
        }
        slots -= 1;
        let scan = scans
            .0
            .entry(c.id)
            .or_insert_with(|| UnwantedScan::new(inner, c, seek));
        if scan.after != c.cleared {
            *scan = UnwantedScan::new(inner, c, seek);
        }
        scan.reader.limit_scan(budget);
        let found = scan.reader.next_record();
        budget = budget.saturating_sub(scan.reader.scanned_bytes());
        let found = match found {
            Ok(found) => found,
            // Not known whether a record waits for it, as at the budget:
            // judging it now would take the time of the record after its
            // cleared index, which the mask may exclude, as its wait (and
            // keep it). A size limit's drop is not this (see `dropped`);
            // while the error lasts, only the size limit applies to it.
            Err(e) => {
                tracing::debug!(consumer = %c.name, error = %e, "looking past unwanted records failed");
                scans.0.remove(&c.id);
                unresolved.push(c.name.clone());
                continue;
            }
        };
        let to = found
            .as_ref()
            .map_or(scan.reader.position() - 1, |r| r.index - 1)
            .min(last);
        if to > c.cleared {
            tracing::debug!(consumer = %c.name, from = c.cleared, to, "passing records the consumer's mask excludes");
            moves.push((c.name.clone(), to));
            scan.after = to;
        }
        match found {
            Some(r) if r.index == to + 1 => {
                c.waiting_since = Some((to, r.time_ns));
                scans.0.remove(&c.id);
            }
            _ if to < last => unresolved.push(c.name.clone()),
            _ => {}
        }
    }
    for (name, to) in moves {
        consumers.move_past(&name, to);
    }
    unresolved
}

/// The consumers whose wait the idle-time limit needs and has not read,
/// as `(id, cleared)`: the record after the cleared index must be read
/// to know since when it has waited.
fn waits_to_read(
    consumers: &Consumers,
    unresolved: &[String],
    ret: &Retention,
    now: u64,
    last: u64,
) -> Vec<(u32, u64)> {
    let Some(limit) = ret.max_idle_time.map(plan::nanos) else {
        return Vec::new();
    };
    consumers
        .list()
        .iter()
        .filter(|c| {
            c.cleared < last
                && !unresolved.contains(&c.name)
                && ret.max_idle_records.is_none_or(|m| last - c.cleared <= m)
                && now.saturating_sub(c.last_active_ns) > limit
                && c.waiting_since.is_none_or(|(at, _)| at != c.cleared)
        })
        .map(|c| (c.id, c.cleared))
        .collect()
}

/// When a record began to wait for each consumer of `lookups`: the time
/// of the record after its cleared index, as `(id, cleared, time)`. A
/// consumer is idle only while records wait for it: one that had read
/// everything on a quiet log is not evicted by the first record after the
/// quiet spell, nor by the MARK records of other consumers' evictions. 0
/// (waiting since ever) if that record cannot be read, e.g. because a
/// size limit dropped it.
fn read_waits(inner: &Inner, lookups: &[(u32, u64)]) -> Vec<(u32, u64, u64)> {
    lookups
        .iter()
        .map(|&(id, cleared)| {
            let mut reader = Reader::open_dir_with(inner.opts.fs.clone(), &inner.dir, cleared + 1);
            let t = match reader.next_record() {
                Ok(Some(r)) if r.index == cleared + 1 => r.time_ns,
                _ => 0,
            };
            (id, cleared, t)
        })
        .collect()
}

/// Keeps the waits read, for consumers still at the cleared index they
/// were read for: one read per clear, not per pass.
fn note_waits(consumers: &mut Consumers, found: &[(u32, u64, u64)]) {
    for &(id, cleared, t) in found {
        if let Some(c) = consumers.list_mut().iter_mut().find(|c| c.id == id)
            && c.cleared == cleared
        {
            c.waiting_since = Some((cleared, t));
        }
    }
}

/// Reads the time of the newest record of each sealed segment that has
/// none yet, for the age limit or the floor: those with fewer than
/// `within` bytes of segments newer than them (the floor's size keeps no
/// other). Segments found at open carry no time until their footer is
/// read; what was read is kept in the catalog, so each footer is read at
/// most once, not on every retention pass.
fn read_segment_times(inner: &Inner, within: u64) {
    let fs = &*inner.opts.fs;
    let segs = inner.catalog.snapshot();
    let mut newer: u64 = segs.iter().map(|s| s.bytes).sum();
    // Never the newest, as the plan: it is not removed.
    for s in segs.iter().take(segs.len().saturating_sub(1)) {
        if s.last.is_none() {
            break;
        }
        newer -= s.bytes;
        if s.last_time_ns != 0 || s.time_read || newer >= within {
            continue;
        }
        let t = fs
            .open_read(&s.path)
            .ok()
            .and_then(|f| {
                let len = f.len().ok()?;
                Footer::read(&*f, len).ok()??.ok()
            })
            .map_or(0, |f| f.last_time_ns);
        inner.catalog.set_last_time(s.base, t);
    }
}

/// Writes the MARKs that wait only for room, in order. Those of unsaved
/// evictions stay behind; a segment dropped meanwhile is announced at once,
/// for its records are gone whatever happens to the eviction.
fn flush_marks(fx: &impl Effects, marks: &mut PendingMarks) {
    let mut k = 0;
    while let Some(m) = marks.queue.get(k) {
        if m.unsaved.is_some() {
            k += 1;
            continue;
        }
        let Some(index) = fx.append_mark(&m.ann) else {
            break;
        };
        if let Some(m) = marks.queue.remove(k) {
            marks.written.push((m.ann, index));
        }
    }
}

mod plan;
#[cfg(test)]
mod tests;
