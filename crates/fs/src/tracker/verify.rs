//! Bringing entries, directories and whole trees back to what is live:
//! looking again at entries an event left in doubt, reading a directory
//! whose contents no event reported, and comparing the whole tree with a
//! walk after lost events.

use std::collections::HashMap;

use super::root::{Root, is_cookie};
use super::sink::Sink;
use crate::change::{Change, How};
use crate::diff::{diff, diff_in};
use crate::id::ObjectId;
use crate::probe::Found;
use crate::tree::{Entry, Set, Tree};
use crate::walk::walk;

/// Entries touched in one drain before they are looked at anyway: bounds
/// the memory of a storm that never lets the queue empty.
pub(crate) const MAX_TOUCHES: usize = 1 << 16;

impl Root {
    /// Looks again at every doubtful entry (see [`super::touches`]), then
    /// forgets the drain's touches. With `settle_now` (a sync is to be
    /// answered) nothing is put off.
    pub(crate) fn verify_touched(&mut self, sink: &mut Sink, settle_now: bool) {
        if self.touches.is_empty() {
            return;
        }
        let touched = self.touches.take_doubtful();
        if !touched.is_empty() {
            self.verify(&touched, sink, settle_now);
        }
        // Kept until now: a deferral asks whether an entry is still moving.
        self.touches.end_drain();
    }

    /// Brings `entries` (directory, name) to their live state. An id that
    /// left one of them and is live at another is a rename; the rest are
    /// removals and creations. Every change is flagged `VERIFIED`.
    ///
    /// The looks are one after the other while changes may go on, so they
    /// can disagree: a file renamed between two looks is seen in neither
    /// entry (or in both). Unless `settle_now`, an object that left an
    /// entry but still has a name, or is seen at a second name with one
    /// name only, is looked at again after the next drain (a few times at
    /// most), when its events have told where it went.
    pub(crate) fn verify(
        &mut self,
        entries: &[(ObjectId, Box<[u8]>)],
        sink: &mut Sink,
        settle_now: bool,
    ) {
        let mut gone: Vec<(ObjectId, Box<[u8]>, Entry)> = Vec::new();
        let mut came: Vec<(ObjectId, Box<[u8]>, Entry)> = Vec::new();
        for (d, n) in entries {
            if !self.tree.has_dir(d) || (d == &self.id && is_cookie(n)) {
                continue;
            }
            let logged = self.tree.lookup(d, n);
            if logged.is_none() && self.touches.empty_for_sure(d, n) {
                continue;
            }
            let live = match self.probe.lookup(d, n) {
                Ok(Found::Entry(e)) => Some(e),
                Ok(Found::Absent) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "looking at an entry again failed");
                    continue;
                }
            };
            if logged.as_ref().map(|e| &e.id) == live.as_ref().map(|e| &e.id) {
                continue;
            }
            if let Some(e) = logged {
                gone.push((d.clone(), n.clone(), e));
            }
            if let Some(e) = live {
                came.push((d.clone(), n.clone(), e));
            }
        }
        // Moves first: an id gone from one entry and live at another.
        let mut by_id: HashMap<ObjectId, usize> = HashMap::new();
        for (i, (_, _, e)) in gone.iter().enumerate() {
            by_id.insert(e.id.clone(), i);
        }
        let mut moved = vec![false; gone.len()];
        let mut created = Vec::new();
        for (d, n, e) in came {
            match by_id.get(&e.id).copied().filter(|&i| !moved[i]) {
                Some(i) => {
                    moved[i] = true;
                    let (sd, sn, se) = gone[i].clone();
                    if self.tree.lookup(&sd, &sn).is_none_or(|x| x.id != se.id)
                        || !self.tree.has_dir(&d)
                    {
                        continue;
                    }
                    let there = self.tree.lookup(&d, &n);
                    if let Some(x) = &there
                        && (x.kind.is_dir() || by_id.contains_key(&x.id))
                    {
                        // Moved on or a directory: its own entry handles
                        // it; here it just goes.
                        self.remove(&d, &n, How::Verified, sink);
                    }
                    let overwritten = self.tree.lookup(&d, &n).map(|x| {
                        let last = self.tree.links(&x.id) <= 1;
                        (x, last)
                    });
                    if se.kind.is_dir() && self.tree.is_ancestor(&se.id, &d) {
                        continue;
                    }
                    self.emit(
                        Change::Rename {
                            sparent: sd,
                            sname: sn.into_vec(),
                            parent: d,
                            name: n.into_vec(),
                            entry: se,
                            overwritten,
                            exchanged: None,
                        },
                        How::Verified,
                        sink,
                    );
                }
                None => created.push((d, n, e)),
            }
        }
        for (i, (d, n, e)) in gone.into_iter().enumerate() {
            if !moved[i] && self.tree.lookup(&d, &n).is_some_and(|x| x.id == e.id) {
                let moving =
                    !settle_now && self.probe.nlink_by_handle(&e.id).is_some_and(|l| l > 0);
                if moving && self.touches.defer(&d, &n) {
                    continue;
                }
                self.remove(&d, &n, How::Verified, sink);
            }
        }
        for (d, n, e) in created {
            if !self.tree.has_dir(&d) || self.tree.lookup(&d, &n).is_some_and(|x| x.id == e.id) {
                continue;
            }
            let second_name = !e.kind.is_dir() && self.tree.links(&e.id) > 0;
            if second_name
                && !settle_now
                && self.probe.nlink_by_handle(&e.id).is_some_and(|l| l < 2)
                && self.touches.defer(&d, &n)
            {
                continue;
            }
            if self.tree.lookup(&d, &n).is_some() {
                self.remove(&d, &n, How::Verified, sink);
            }
            let isdir = e.kind.is_dir();
            let link = !isdir && self.tree.links(&e.id) > 0;
            let id = e.id.clone();
            self.emit(
                Change::Create {
                    parent: d,
                    name: n.into_vec(),
                    entry: e,
                    link,
                },
                How::Verified,
                sink,
            );
            if isdir {
                self.adopt(&id, How::Verified, sink);
            }
        }
    }

    /// Reads directory `dir` (in the tree) and everything below it, and
    /// logs what the tree lacks: a directory that came with contents no
    /// event reported (moved in from outside, a snapshot, or one whose
    /// events the kernel merged away).
    pub(crate) fn adopt(&mut self, dir: &ObjectId, how: How, sink: &mut Sink) {
        let sub = match walk(self.probe.mount(), Some(dir), &self.id, self.fsid) {
            Ok((t, _)) => t,
            Err(e) => {
                tracing::warn!(error = %e, "reading a directory that came into the tree failed");
                return;
            }
        };
        for (p, n, e, _) in sub.links_top_down() {
            if self.tree.lookup(&p, &n).is_some_and(|x| x.id == e.id) || !self.tree.has_dir(&p) {
                continue;
            }
            if self.tree.lookup(&p, &n).is_some() {
                self.remove(&p, &n, how, sink);
            }
            let link = !e.kind.is_dir() && self.tree.links(&e.id) > 0;
            self.emit(
                Change::Create {
                    parent: p,
                    name: n.into_vec(),
                    entry: e,
                    link,
                },
                how,
                sink,
            );
        }
    }

    /// Logs the difference between the tree and `live` (a walk), flagged
    /// `how`; the tree is then `live`. Returns the number of changes.
    pub(crate) fn compare_with(&mut self, live: &Tree, how: How, sink: &mut Sink) -> u64 {
        let changes = diff(&self.tree, live);
        self.log_changes(changes, how, sink)
    }

    /// As [`Root::compare_with`], when only the entries of the directories
    /// in `scope` may differ (a rescan's).
    pub(crate) fn compare_in(
        &mut self,
        live: &Tree,
        scope: &Set<ObjectId>,
        how: How,
        sink: &mut Sink,
    ) -> u64 {
        let changes = diff_in(&self.tree, live, scope);
        self.log_changes(changes, how, sink)
    }

    fn log_changes(&mut self, changes: Vec<Change>, how: How, sink: &mut Sink) -> u64 {
        self.counters.compares += 1;
        let n = changes.len() as u64;
        for c in changes {
            self.emit(c, how, sink);
        }
        n
    }
}
