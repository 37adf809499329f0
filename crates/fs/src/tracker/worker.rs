//! The tracker's thread: one `poll` on the fanotify group and an eventfd
//! (requests), reads in batches, the events handed to their roots, and
//! the sync rounds, lost events and coalesced MTIMEs in between.
//!
//! A lone event is read at once. After a drain that read events, the
//! thread sleeps for `batch` before it reads again, so that in a storm the
//! kernel queues a few hundred events per read instead of one or two: a
//! wakeup and a read cost more than handling an event.

use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use weir_sys::fanotify::fid::{FAN_CREATE, FAN_DELETE_SELF, FidEvent, FidGroup, decode_fid_events};

use super::events::Gone;
use super::root::{Root, is_cookie};
use super::sink::Sink;
use super::start::READ_SLICE;
use super::verify::MAX_TOUCHES;
use super::{Request, Rescanned, Shared};
use crate::checkpoint::{Checkpoints, Opened};
use crate::id::ObjectId;
use crate::tree::Tree;
use crate::{Error, Result};

/// The read buffer: a few hundred events.
const READ_BUF: usize = 256 * 1024;
/// How long a stop may take to log what happened before it.
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// After lost events, how long the queue may keep coming before the
/// comparison starts anyway.
const LOST_SETTLE: Duration = Duration::from_millis(100);
/// How often the counters `roots()` and `stats()` read are refreshed
/// (a sync and a stop refresh them too).
const PUBLISH: Duration = Duration::from_millis(50);
/// The share of a core comparisons after lost events may take: after one
/// that took `d`, the next waits `d * (1 / share - 1)`.
const COMPARE_SHARE: f64 = 0.25;

/// Records after a root's latest MARK before it is marked again: the copy
/// holds retention back to that MARK, so this bounds what it keeps more.
const REMARK_AFTER: u64 = 1 << 16;

struct SyncWait {
    round: u64,
    pending: usize,
    reply: mpsc::Sender<Result<()>>,
}

pub(crate) struct Worker {
    pub(crate) group: FidGroup,
    pub(crate) roots: Vec<Root>,
    pub(crate) sink: Sink,
    pub(crate) requests: mpsc::Receiver<Request>,
    pub(crate) wake: Arc<OwnedFd>,
    pub(crate) shared: Arc<Mutex<Shared>>,
    pub(crate) mtime_interval: Duration,
    pub(crate) batch: Duration,
    buf: Vec<u8>,
    round: u64,
    waits: Vec<SyncWait>,
    lost: Option<Instant>,
    next_compare: Option<Instant>,
    last_read: Option<Instant>,
    published: Option<Instant>,
    stats: Stats,
    /// The trees' persistent copy, and its checkpoints.
    copy: Option<(Opened, Checkpoints)>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    pub(crate) reads: u64,
    pub(crate) events: u64,
    pub(crate) overflows: u64,
    pub(crate) dropped: u64,
    pub(crate) syncs: u64,
}

/// How the thread and the [`Tracker`](super::Tracker) talk: its requests,
/// the eventfd that wakes it for them, and what it publishes.
pub(crate) struct Link {
    pub(crate) requests: mpsc::Receiver<Request>,
    pub(crate) wake: Arc<OwnedFd>,
    pub(crate) shared: Arc<Mutex<Shared>>,
}

impl Worker {
    pub(crate) fn new(
        group: FidGroup,
        roots: Vec<Root>,
        sink: Sink,
        Link {
            requests,
            wake,
            shared,
        }: Link,
        (mtime_interval, batch): (Duration, Duration),
        copy: Option<(Opened, Checkpoints)>,
    ) -> Worker {
        Worker {
            group,
            roots,
            sink,
            requests,
            wake,
            shared,
            mtime_interval,
            batch,
            buf: vec![0; READ_BUF],
            round: 0,
            waits: Vec::new(),
            lost: None,
            next_compare: None,
            last_read: None,
            published: None,
            stats: Stats::default(),
            copy,
        }
    }

    pub(crate) fn run(mut self) -> Result<()> {
        let r = self.run_loop();
        self.publish();
        r
    }

    fn run_loop(&mut self) -> Result<()> {
        let mut stop = None;
        let mut rescans = Vec::new();
        loop {
            while let Ok(r) = self.requests.try_recv() {
                match r {
                    Request::Sync(tx) => self.start_sync(tx)?,
                    Request::Rescan(path, tx) => rescans.push((path, tx)),
                    Request::Stop(tx) => stop = Some(tx),
                }
            }
            if self.read_first()? {
                // Trees still being read: no event is read before they
                // are, since an event is judged against its tree. A sync,
                // a rescan or a stop waits.
                continue;
            }
            if !rescans.is_empty() {
                // The tree as logged up to the requests, then each one.
                self.drain()?;
                for (path, tx) in rescans.drain(..) {
                    let _ = tx.send(self.rescan_now(&path));
                }
                self.publish();
            }
            if let Some(tx) = stop.take() {
                // The times of the directories the copy will take, before
                // the last round: every change they show is then logged.
                self.stamp_touched();
                // The last round: what happened before the stop is logged.
                let (stx, srx) = mpsc::channel();
                self.start_sync(stx)?;
                // Bounded, so that a stop cannot hang: a cookie is read
                // within a queue's drain and a comparison within a walk.
                let deadline = Instant::now() + STOP_LIMIT;
                while !self.waits.is_empty() && Instant::now() < deadline {
                    self.drain()?;
                    if !self.waits.is_empty() {
                        self.wait(Some(Duration::from_millis(1)), true);
                    }
                }
                // Not answered in time: the stop did not log everything
                // before it, and says so.
                let r = srx.try_recv().unwrap_or(Err(Error::SyncFailed));
                // Then the copy takes everything logged. A copy that could
                // not be written costs the next start a longer
                // comparison, not a record: no reason to fail the stop.
                if let Err(e) = self.finish_copy() {
                    tracing::warn!(error = %e, "the trees' persistent copy did not take the last changes");
                }
                self.publish();
                let _ = tx.send(r);
                return Ok(());
            }
            let reads = self.stats.reads;
            self.drain()?;
            let mut next: Option<Instant> = None;
            for root in &mut self.roots {
                if let Some(t) = root.flush_dirty(self.mtime_interval, &mut self.sink) {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
            if let Some(t) = self.next_compare.filter(|_| self.lost.is_some()) {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
            self.checkpoint();
            if let Some((_, c)) = &self.copy {
                let touched = self
                    .roots
                    .iter()
                    .any(|r| r.ended.is_none() && !r.is_reading() && r.tree.touched_dirs() > 0);
                if let Some(t) = c.wake_at(touched) {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
            self.publish_now_and_then();
            if self.stats.reads > reads && self.lost.is_none() {
                // Events came: let the next ones gather for a batch's time
                // (requests still wake us), so a storm is read a few
                // hundred events at a time. A lone event was read at once.
                self.wait(Some(self.batch), false);
            } else {
                let timeout = next.map(|t| t.saturating_duration_since(Instant::now()));
                self.wait(timeout, true);
            }
        }
    }

    /// Reads on the trees not yet read, for a slice of time; whether some
    /// are still being read.
    fn read_first(&mut self) -> Result<bool> {
        let (mut reading, mut done) = (false, false);
        let until = Instant::now() + READ_SLICE;
        for (i, root) in self.roots.iter_mut().enumerate() {
            if !root.is_reading() {
                continue;
            }
            let copy = self.copy.as_mut();
            if root.read_on(until, &mut self.sink, copy.as_ref().map(|(o, _)| o), false)? {
                if let Some((_, c)) = copy {
                    c.started(i, root.copy);
                }
                done = true;
            } else {
                reading = true;
            }
        }
        if done {
            // A reading's temporaries (a walk's listings, the tree it was
            // compared with) are freed now, and are as large as the tree.
            weir_sys::heap::trim();
            // At once: the thread may sleep long after this, and the end
            // of a reading is what `roots()` callers wait to see.
            self.publish();
        } else {
            self.publish_now_and_then();
        }
        Ok(reading)
    }

    /// The on-demand rescan of the root at `path`.
    fn rescan_now(&mut self, path: &std::path::Path) -> Result<Rescanned> {
        let root = self
            .roots
            .iter_mut()
            .find(|r| r.path == path && r.ended.is_none())
            .ok_or_else(|| Error::NotARoot {
                path: path.to_path_buf(),
            })?;
        let copy = self.copy.as_ref().and_then(|(opened, _)| {
            crate::checkpoint::CopyTimes::new(opened, &root.path, &root.id)
        });
        root.rescan_now(&mut self.sink, copy.as_ref())
    }

    /// Hands the copy what a checkpoint due or under way has next.
    fn checkpoint(&mut self) {
        if !self.copy.as_ref().is_some_and(|(_, c)| c.is_due()) {
            return;
        }
        let keep = self.keep_marks();
        let Some((_, c)) = self.copy.as_mut() else {
            return;
        };
        let mut trees = copy_trees(&mut self.roots);
        c.step(&mut trees, self.sink.last, keep);
    }

    /// The first index retention must keep for since queries: the oldest
    /// of the watched roots' latest MARKs (a query finds its root by one).
    /// A root whose latest MARK is over [`REMARK_AFTER`] records old is
    /// marked again (`fs root watching`) first, so what is kept stays
    /// within that of what the copy covers.
    fn keep_marks(&mut self) -> Option<u64> {
        let last = self.sink.last?.index();
        let mut keep: Option<u64> = None;
        for root in self
            .roots
            .iter()
            .filter(|r| r.ended.is_none() && !r.is_reading())
        {
            let id = root.id.as_bytes();
            if self
                .sink
                .latest_mark(id)
                .is_none_or(|at| last.saturating_sub(at) > REMARK_AFTER)
            {
                let path = root.path.as_os_str().as_encoded_bytes();
                self.sink.mark(
                    crate::replay::WATCHING,
                    id,
                    &[("root", path), ("fsid", root.fsid_text.as_bytes())],
                );
            }
            if let Some(at) = self.sink.latest_mark(id) {
                keep = Some(keep.map_or(at, |k| k.min(at)));
            }
        }
        keep
    }

    /// Gives every touched directory its times now, and every directory
    /// the copy holds without them, so that the copy takes them with it:
    /// the last round, after, logs every change they show, and a change it
    /// applies forgets them again. A restart then reads only the
    /// directories changed after the stop.
    fn stamp_touched(&mut self) {
        if self.copy.is_none() {
            return;
        }
        for root in self
            .roots
            .iter_mut()
            .filter(|r| r.ended.is_none() && !r.is_reading())
        {
            root.tree.touch_untimed();
            for id in root.tree.touched_ids() {
                let times = match crate::rescan::open_dir(root.probe.mount(), &id, &root.id) {
                    Ok(Some(fd)) => crate::walk::times_at(std::os::fd::AsFd::as_fd(&fd))
                        .ok()
                        .and_then(crate::walk::settled),
                    _ => None,
                };
                if let Some(t) = times {
                    root.tree.set_dir_times(&id, t);
                }
            }
        }
    }

    /// At a stop: the copy takes everything logged, and its thread ends.
    fn finish_copy(&mut self) -> Result<()> {
        if self.copy.is_none() {
            return Ok(());
        }
        let keep = self.keep_marks();
        let Some((_, c)) = self.copy.take() else {
            return Ok(());
        };
        let mut trees = copy_trees(&mut self.roots);
        c.finish(&mut trees, self.sink.last, keep)
    }

    /// Sleeps in poll on the requests and (with `group`) the events.
    fn wait(&mut self, timeout: Option<Duration>, group: bool) {
        let ts = timeout.map(|d| rustix::time::Timespec {
            tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(d.subsec_nanos()),
        });
        let mut fds = vec![PollFd::new(&*self.wake, PollFlags::IN)];
        if group {
            fds.push(PollFd::new(&self.group, PollFlags::IN));
        }
        match poll(&mut fds, ts.as_ref()) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => tracing::warn!(error = %e, "poll failed"),
        }
        if fds[0].revents().contains(PollFlags::IN) {
            let mut b = [0u8; 8];
            let _ = rustix::io::read(&*self.wake, &mut b);
        }
    }

    /// Reads and handles everything queued; at the end (the queue empty),
    /// looks again at doubtful entries, compares after lost events, and
    /// answers the sync rounds that are complete.
    fn drain(&mut self) -> Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.drain_into(&mut buf);
        self.buf = buf;
        r?;
        if self.lost.is_some() {
            // The budget spaces comparisons out, but a sync waits for
            // none: its cookie may be among the events lost, and then only
            // the comparison answers it.
            let asked = !self.waits.is_empty();
            if asked || self.next_compare.is_none_or(|t| Instant::now() >= t) {
                self.recover_lost();
            }
        }
        if self.lost.is_none() {
            // A sync about to be answered settles every doubt now.
            let settle_now = self.waits.iter().any(|w| w.pending == 0);
            for root in &mut self.roots {
                root.verify_touched(&mut self.sink, settle_now);
            }
            self.answer_waits();
        }
        Ok(())
    }

    fn drain_into(&mut self, buf: &mut [u8]) -> Result<()> {
        let started = Instant::now();
        loop {
            let n = self.group.read(buf)?;
            if n == 0 {
                return Ok(());
            }
            self.stats.reads += 1;
            self.last_read = Some(Instant::now());
            let mut evs: Vec<FidEvent<'_>> = Vec::with_capacity(n / 48);
            if let Err(e) = decode_fid_events(&buf[..n], |e| evs.push(e)) {
                // Bytes the kernel would never send: what they held is
                // lost, and a comparison recovers it.
                tracing::error!(error = %e, "undecodable fanotify events; comparing the trees");
                self.mark_lost();
            }
            self.stats.events += evs.len() as u64;
            // Renames already handled as another's exchange.
            let mut skip = vec![false; evs.len()];
            let mut gone = Gone::default();
            for e in &evs {
                if e.mask & FAN_DELETE_SELF != 0
                    && let Some(t) = e.target
                {
                    gone.insert(ObjectId::from_fid(&t));
                }
            }
            for i in 0..evs.len() {
                if skip[i] {
                    continue;
                }
                let ev = evs[i];
                if ev.is_overflow() {
                    self.stats.overflows += 1;
                    self.mark_lost();
                    continue;
                }
                if self.lost.is_some() {
                    self.stats.dropped += 1;
                    self.cookie_only(&ev);
                    continue;
                }
                for root in &mut self.roots {
                    if !root.owns(&ev) {
                        continue;
                    }
                    let h = root.on_event(&ev, &evs[i + 1..], &gone, &mut self.sink);
                    if let Some(j) = h.consumed {
                        skip[i + 1 + j] = true;
                    }
                    if let Some(round) = h.cookie_round {
                        cookie_seen(&mut self.waits, round);
                    }
                    for round in h.released {
                        cookie_seen(&mut self.waits, round);
                    }
                }
            }
            for root in &mut self.roots {
                if root.touches.len() > MAX_TOUCHES {
                    root.verify_touched(&mut self.sink, false);
                }
            }
            // A storm that never lets the queue empty: after lost events,
            // compare anyway once it has gone on for a while.
            if self.lost.is_some_and(|t| t.elapsed() >= LOST_SETTLE) {
                return Ok(());
            }
            if started.elapsed() >= Duration::from_secs(1) {
                return Ok(());
            }
        }
    }

    /// While events are being dropped, a cookie still counts.
    fn cookie_only(&mut self, ev: &FidEvent<'_>) {
        let Some(dn) = ev.dir_name else { return };
        if ev.mask & FAN_CREATE == 0 || !is_cookie(dn.name) {
            return;
        }
        let dir = ObjectId::from_fid(&dn.dir);
        for root in &mut self.roots {
            if root.id == dir
                && let Some(&round) = root.cookies.get(dn.name)
            {
                cookie_seen(&mut self.waits, round);
            }
        }
    }

    fn mark_lost(&mut self) {
        if self.lost.is_none() {
            self.lost = Some(Instant::now());
            for root in &mut self.roots {
                root.touches.clear();
            }
        }
    }

    /// Lost events: a MARK, then each root compared with a walk. The
    /// walks start after every sync round so far was asked for, so they
    /// see every change made before it: those rounds are answered, whether
    /// or not their cookies' events were among those lost.
    fn recover_lost(&mut self) {
        let started = Instant::now();
        let covered = self.round;
        for root in self.roots.iter_mut().filter(|r| r.ended.is_none()) {
            let idb = root.id.as_bytes().to_vec();
            let path = root.path.as_os_str().as_encoded_bytes().to_vec();
            self.sink
                .mark(b"fs events lost: tree compared", &idb, &[("root", &path)]);
            // Incremental: a lost change moved its directory's times, so
            // only the directories whose times moved (or are not known)
            // are read, as at a restart.
            let copy = self.copy.as_ref().and_then(|(opened, _)| {
                crate::checkpoint::CopyTimes::new(opened, &root.path, &root.id)
            });
            match root.compare_rescanned(&mut self.sink, copy.as_ref()) {
                Ok((n, stats)) => {
                    tracing::info!(root = %root.path.display(), changes = n, dirs_read = stats.read, dirs_checked = stats.checked, "compared the tree after lost events");
                }
                Err(e) => {
                    tracing::error!(error = %e, root = %root.path.display(), "rescanning the tree after lost events failed")
                }
            }
            root.dirty.clear();
        }
        // The rescans' listings and the trees compared are freed.
        weir_sys::heap::trim();
        self.lost = None;
        for w in self.waits.iter_mut().filter(|w| w.round <= covered) {
            w.pending = 0;
        }
        let took = started.elapsed();
        self.next_compare = Some(Instant::now() + took.mul_f64(1.0 / COMPARE_SHARE - 1.0));
    }

    fn start_sync(&mut self, reply: mpsc::Sender<Result<()>>) -> Result<()> {
        self.round += 1;
        self.stats.syncs += 1;
        let mut pending = 0;
        for root in &mut self.roots {
            match root.cookie(self.round) {
                Ok(true) => pending += 1,
                Ok(false) => {}
                Err(e) => {
                    let _ = reply.send(Err(Error::Sys(e)));
                    return Ok(());
                }
            }
        }
        self.waits.push(SyncWait {
            round: self.round,
            pending,
            reply,
        });
        Ok(())
    }

    fn answer_waits(&mut self) {
        if !self.waits.iter().any(|w| w.pending == 0) {
            return;
        }
        let durable = match (self.sink.log(), self.sink.last) {
            (Some(log), Some(a)) => log.wait_durable(a).map(drop).map_err(Error::Log),
            _ => Ok(()),
        };
        let failed = self.sink.error.take().is_some();
        self.publish();
        let mut keep = Vec::new();
        for w in self.waits.drain(..) {
            if w.pending > 0 {
                keep.push(w);
                continue;
            }
            let r = match (&durable, failed) {
                (Err(_), _) => Err(Error::SyncFailed),
                (Ok(()), true) => Err(Error::SyncFailed),
                (Ok(()), false) => Ok(()),
            };
            let _ = w.reply.send(r);
        }
        self.waits = keep;
    }

    /// Publishes the counters if the last time was long enough ago: in a
    /// storm the loop turns over every millisecond or so.
    fn publish_now_and_then(&mut self) {
        let now = Instant::now();
        if self
            .published
            .is_some_and(|t| now.duration_since(t) < PUBLISH)
        {
            return;
        }
        self.published = Some(now);
        self.publish();
    }

    pub(crate) fn publish(&self) {
        let mut s = match self.shared.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        s.stats = self.stats;
        s.records = self.sink.records;
        // FIONREAD fails only on a group that is not one: then nothing is
        // queued that could be said.
        s.backlog = self.group.queued().unwrap_or(0);
        s.roots = self.roots.iter().map(Root::status).collect();
        if let Some((_, c)) = &self.copy {
            s.checkpoints = c.commits();
        }
    }
}

/// The trees a checkpoint takes: those read and still watched.
fn copy_trees(roots: &mut [Root]) -> Vec<Option<&mut Tree>> {
    roots
        .iter_mut()
        .map(|r| (!r.is_reading() && r.ended.is_none()).then_some(&mut r.tree))
        .collect()
}

fn cookie_seen(waits: &mut [SyncWait], round: u64) {
    for w in waits.iter_mut().filter(|w| w.round == round) {
        w.pending = w.pending.saturating_sub(1);
    }
}
