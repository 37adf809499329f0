//! A root's first reading: the walk that gives its tree, then a MARK, or
//! with a view of the root in the log, the comparison with that view.
//!
//! A start is ready once every root is marked: from then on the kernel
//! queues every change. The walk takes the rest of a short budget in
//! [`Tracker::start`](super::Tracker::start) and, for a tree too big for
//! it, goes on in the tracker's thread before any event is read, so that
//! a start takes the same few milliseconds whatever the tree's size. A
//! change made while the walk runs is either seen by it (and in the tree
//! the MARK starts) or in the queue, and logged after the MARK; the
//! queue's events that the walk already saw are skipped as the tree
//! already reflects them, as after a comparison.

use std::time::{Duration, Instant};

use super::progress::Phase;
use super::root::Root;
use super::sink::Sink;
use crate::change::How;
use crate::checkpoint::{self, Load, Loaded, Opened};
use crate::replay::View;
use crate::rescan::{Looked, Rescan, RescanStats, look_counted};
use crate::walk::Walk;
use crate::{Error, Result};

/// How long [`Tracker::start`](super::Tracker::start) reads trees before
/// it leaves the rest to the thread.
pub(crate) const START_BUDGET: Duration = Duration::from_millis(10);

/// How long the thread reads before it looks at its requests again.
pub(crate) const READ_SLICE: Duration = Duration::from_millis(50);

/// A first reading under way.
#[derive(Debug)]
pub(crate) struct FirstRead {
    walk: Walk,
    /// Whether a view of the root in the log is compared with the walk.
    resume: bool,
    /// Whether the persistent copy was tried (it is, before the walk).
    copy_tried: bool,
    /// Whether a restart from the copy is content-exact.
    content: bool,
    started: Instant,
}

/// Trees the copy holds up to this many entries are loaded within
/// [`Tracker::start`](super::Tracker::start)'s budget; bigger ones by the
/// thread, as a walk would be.
const QUICK_ENTRIES: u64 = 20_000;

impl Root {
    /// Begins the first reading (removing the sync cookies a killed weir
    /// left first, so that the walk does not see them).
    pub(crate) fn begin_reading(&mut self, resume: bool, content: bool) -> Result<()> {
        self.remove_stale_cookies();
        let walk = Walk::new(self.probe.mount(), None, &self.id, self.fsid)
            .map_err(|e| self.read_error(e))?;
        self.first = Some(FirstRead {
            walk,
            resume,
            copy_tried: false,
            content,
            started: Instant::now(),
        });
        Ok(())
    }

    /// Whether the first reading is still under way.
    pub(crate) fn is_reading(&self) -> bool {
        self.first.is_some()
    }

    /// Entries the first reading has seen so far.
    pub(crate) fn read_so_far(&self) -> Option<u64> {
        self.first.as_ref().map(|f| f.walk.stats().entries)
    }

    /// Reads on until `until`; once the walk is done, logs the MARK (or
    /// the comparison with the log's view) and returns `true`. With
    /// `copy`, a root the persistent copy holds starts from it instead of
    /// a walk (`quick`: only a small one, within a start's budget), and the
    /// tree keeps its touches for the next checkpoint.
    pub(crate) fn read_on(
        &mut self,
        until: Instant,
        sink: &mut Sink,
        copy: Option<&Opened>,
        quick: bool,
    ) -> Result<bool> {
        let Some(f) = self.first.as_mut() else {
            return Ok(true);
        };
        if let (false, true, Some(c), Some(log)) =
            (f.copy_tried, f.resume, copy, sink.log().cloned())
        {
            let budget = quick.then_some(QUICK_ENTRIES);
            let t = Instant::now();
            let look = !f.content;
            let (loaded, early) = self.load_looking(c, &log, budget, look);
            tracing::debug!(root = %self.path.display(), seconds = t.elapsed().as_secs_f64(), early = early.is_some(), "loaded from the persistent copy");
            let Some(f) = self.first.as_mut() else {
                return Ok(true);
            };
            match loaded {
                Load::Later => return Ok(false),
                Load::No => f.copy_tried = true,
                Load::Yes(l) => {
                    f.copy_tried = true;
                    let (started, content) = (f.started, f.content);
                    let restarted = self.restart_from(l, &log, sink, content, early);
                    if !matches!(restarted, Ok(false)) {
                        self.progress.end();
                    }
                    if restarted? {
                        self.first = None;
                        tracing::info!(root = %self.path.display(), entries = self.tree.len(), seconds = started.elapsed().as_secs_f64(), "reconciled the tree from its persistent copy");
                        return Ok(true);
                    }
                }
            }
        }
        let Some(f) = self.first.as_mut() else {
            return Ok(true);
        };
        if self.progress.get().map(|p| p.phase) != Some(Phase::Walking) {
            self.progress.begin(Phase::Walking, None);
        }
        let done = f.walk.step(self.probe.mount(), Some(until));
        self.progress.set(f.walk.stats().entries);
        let done = done.map_err(|e| {
            self.progress.end();
            self.read_error(e)
        })?;
        if !done {
            return Ok(false);
        }
        let Some(f) = self.first.take() else {
            return Ok(true);
        };
        let took = f.started.elapsed();
        let (live, stats) = f.walk.finish();
        let log = sink.log().cloned();
        let view = match (f.resume, log.as_deref()) {
            (true, Some(log)) => {
                self.progress.begin(Phase::Replaying, None);
                let v = crate::replay::view(log, &self.path, Some(&self.id));
                v.inspect_err(|_| self.progress.end())?
            }
            _ => None,
        };
        self.copy = None;
        let path = self.path.as_os_str().as_encoded_bytes().to_vec();
        let id = self.id.as_bytes().to_vec();
        let entries = live.len().to_string();
        match view {
            Some(v) => {
                self.tree = v.tree;
                if copy.is_some() {
                    // The copy holds none of it: the first checkpoint
                    // writes it whole.
                    self.tree.track_touches(true);
                }
                self.progress.begin(Phase::Comparing, None);
                let n = self.compare_with(&live, How::Reconciled, sink);
                self.mark_reconciled(sink, live.len(), (v.since, v.replayed), n, None);
            }
            None => {
                let dirs = stats.dirs.to_string();
                let (fstype, mark) = (self.fstype.clone(), self.mark.name());
                let fsid = self.fsid_text.clone();
                self.tree = live;
                if copy.is_some() {
                    self.tree.track_touches(true);
                }
                sink.mark(
                    crate::replay::WATCHED,
                    &id,
                    &[
                        ("root", &path),
                        ("fstype", fstype.as_bytes()),
                        ("mark", mark.as_bytes()),
                        ("fsid", fsid.as_bytes()),
                        ("entries", entries.as_bytes()),
                        ("dirs", dirs.as_bytes()),
                    ],
                );
            }
        }
        self.progress.end();
        tracing::info!(root = %self.path.display(), entries = self.tree.len(), seconds = took.as_secs_f64(), "read the tree");
        Ok(true)
    }

    /// The copy's tree; with `look`, a look at the live tree made on a
    /// thread of its own from the copy's directories as soon as they are
    /// in, while the other entries load (the two take about as long). The
    /// look is `None` when it failed or the load did not reach it.
    fn load_looking(
        &self,
        c: &Opened,
        log: &weir_log::Log,
        budget: Option<u64>,
        look: bool,
    ) -> (Load, Option<Looked>) {
        let (mount, root_id, fsid) = (self.probe.mount(), &self.id, self.fsid);
        std::thread::scope(|s| {
            let mut early = None;
            let mut dirs_read = |dirs: &crate::Tree| {
                if !look {
                    return;
                }
                let dirs = dirs.clone();
                let looking = move || {
                    let times = |d: &crate::ObjectId| dirs.dir_times(d);
                    look_counted(mount, &dirs, root_id, fsid, &times, None, &|_| {}).ok()
                };
                early = std::thread::Builder::new()
                    .name("weir-fs-look".into())
                    .spawn_scoped(s, looking)
                    .ok();
            };
            let loaded = checkpoint::load(
                c,
                log,
                &self.path,
                &self.id,
                budget,
                &self.progress,
                &mut dirs_read,
            );
            let early = early.and_then(|h| h.join().ok().flatten());
            (loaded, early)
        })
    }

    /// Starts from the copy's tree `l`: the log's records after it
    /// replayed, then a rescan (only the directories whose times moved are
    /// read) compared with it; `false` when the log's records do not
    /// follow from it (the root was watched afresh since), and the walk
    /// must decide. `early` is a look at the live tree made from the
    /// copy's directories: it stands for the rescan when the records
    /// replayed changed no directory.
    fn restart_from(
        &mut self,
        l: Box<Loaded>,
        log: &weir_log::Log,
        sink: &mut Sink,
        content: bool,
        early: Option<Looked>,
    ) -> Result<bool> {
        let Loaded {
            mut tree,
            no,
            covered,
        } = *l;
        // Touched from here: the copy holds the rest.
        tree.track_touches(false);
        let start = View::start(tree, covered);
        let tail = log.last_index().saturating_sub(covered);
        self.progress.begin(Phase::Replaying, Some(tail));
        let reader = log.reader(covered + 1);
        let Some(v) = crate::replay::tail(reader, &self.path, Some(&self.id), start)? else {
            return Ok(false);
        };
        if v.since != covered {
            return Ok(false);
        }
        let t = std::time::Instant::now();
        let horizon = match content {
            true => Some(super::content::horizon(log, covered)?),
            false => None,
        };
        let known = &v.tree;
        // Touches are kept from the load on: none means the tail changed
        // no directory's entries, nor so its times.
        let early = early.filter(|_| !content && known.touched_dirs() == 0);
        let Rescan {
            live,
            stats,
            read,
            scope,
            changed,
        } = match early {
            Some(looked) => {
                let checked = looked.stats().checked;
                self.progress.begin(Phase::Rescanning, Some(checked));
                self.progress.set(checked);
                looked.apply_to(known)
            }
            None => self.counted_rescan(known, &|d| known.dir_times(d), horizon)?,
        };
        let rescan_s = t.elapsed().as_secs_f64();
        let changed = super::content::known_changed(changed, known, &live);
        self.tree = v.tree;
        self.copy = Some((no, covered));
        let t = std::time::Instant::now();
        self.progress
            .begin(Phase::Comparing, Some(scope.len() as u64));
        let mut n = self.compare_in(&live, &scope, How::Reconciled, sink);
        drop(live);
        n += self.log_content(changed, sink);
        tracing::debug!(root = %self.path.display(), rescan_s, compare_s = t.elapsed().as_secs_f64(), read = stats.read, checked = stats.checked, "rescanned from the persistent copy");
        // Their times are taken again at the stop, before its last sync
        // round, as for every directory touched. Not the rescan's own: the
        // events of changes made while it read come after it, and a
        // restart trusting those times missed changes under twenty kills.
        for d in read {
            self.tree.touch_dir(&d);
        }
        self.mark_reconciled(sink, self.tree.len(), (v.since, v.replayed), n, Some(stats));
        Ok(true)
    }

    /// The MARK `fs tree reconciled`: `entries` live, where the view the
    /// comparison started from starts and the records it replayed, its
    /// `changes`, and what a rescan counted.
    fn mark_reconciled(
        &self,
        sink: &mut Sink,
        entries: usize,
        (since, replayed): (u64, u64),
        changes: u64,
        rescan: Option<RescanStats>,
    ) {
        let id = self.id.as_bytes();
        let path = self.path.as_os_str().as_encoded_bytes();
        let counts = [entries as u64, since, replayed, changes].map(|x| x.to_string());
        let keys = ["entries", "since", "replayed", "changes"];
        let dirs = rescan.map(|r| [r.checked, r.read].map(|x| x.to_string()));
        let mut fields: Vec<(&str, &[u8])> = vec![("root", path)];
        fields.extend(keys.iter().zip(&counts).map(|(k, c)| (*k, c.as_bytes())));
        if let Some(d) = &dirs {
            fields.push(("dirs_checked", d[0].as_bytes()));
            fields.push(("dirs_read", d[1].as_bytes()));
        }
        sink.mark(crate::replay::RECONCILED, id, &fields);
    }

    pub(super) fn read_error(&self, source: weir_sys::Error) -> Error {
        Error::Root {
            path: self.path.clone(),
            what: "reading the tree",
            source,
        }
    }
}
