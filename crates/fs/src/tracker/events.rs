//! From fanotify events to changes, for one root.
//!
//! The kernel reports each entry change as an event with the directory's
//! id, the name and the target's id; it merges an event into a queued one
//! of the same process, object and name (a create and an unlink of one file
//! arrive as one CREATE|DELETE), and a rename into a queued identical
//! rename. The tree (what weir has logged) gives each event's starting
//! point, so the rules are:
//!
//! - an event with one entry bit that fits the tree (a CREATE of a name the
//!   tree lacks, a DELETE of the name the tree holds with that id, a
//!   RENAME from where the tree has the object) is logged as it is;
//! - one the tree already reflects (a comparison logged it) is skipped;
//! - anything else (several entry bits, or at odds with the tree) is
//!   settled against the entry's live state, read through the directory's
//!   handle, and logged flagged `VERIFIED`;
//! - an entry touched twice in one drain of the queue may hide a merged
//!   event between the two, so it is looked at again when the queue is
//!   empty (`verify`).
//!
//! The promise is that every entry ends as it is, and that records of
//! an entry are in the kernel's order but where a merge hid an
//! intermediate state (docs/records.md).

use std::time::Instant;

use weir_sys::fanotify::fid::{
    FAN_ATTRIB, FAN_CLOSE_WRITE, FAN_CREATE, FAN_DELETE, FAN_DELETE_SELF, FAN_MODIFY, FAN_ONDIR,
    FAN_RENAME, Fid, FidEvent,
};

use super::root::{Dirty, Root, is_cookie};
use super::sink::Sink;
use crate::change::{Change, How};
use crate::id::ObjectId;
use crate::kind::Kind;
use crate::probe::Found;
use crate::tree::Entry;

/// What handling an event did beyond its own changes.
#[derive(Debug, Default)]
pub(crate) struct Handled {
    /// A sync round whose cookie this event was.
    pub(crate) cookie_round: Option<u64>,
    /// The index (among the events after it) of a rename this one was
    /// exchanged with, already handled.
    pub(crate) consumed: Option<usize>,
    /// Sync rounds whose cookie in this root will never be read: the
    /// event ended the root's watch.
    pub(crate) released: Vec<u64>,
}

/// How far ahead a rename looks for its `RENAME_EXCHANGE` mirror: the
/// kernel queues the two back to back, unless another CPU's event comes
/// between.
const EXCHANGE_LOOKAHEAD: usize = 64;

/// A CREATE and/or DELETE event of an entry of a directory in the tree.
struct Dirent<'a> {
    dir: &'a ObjectId,
    name: &'a [u8],
    /// The object the entry names (or named).
    t: ObjectId,
    isdir: bool,
    /// Its `FAN_CREATE` and `FAN_DELETE` bits.
    bits: u64,
    /// Opened for writing by its creator: said by this event (merged) or
    /// by one of the next few.
    written: bool,
    /// Its last name went in the same read (`FAN_DELETE_SELF`).
    gone: bool,
}

/// The objects whose last name went (`FAN_DELETE_SELF`) in one read.
pub(crate) type Gone = crate::tree::Set<ObjectId>;

/// How far ahead a CREATE looks for its file's first write or close.
const WRITE_LOOKAHEAD: usize = 16;

/// Whether one of the next events writes or closes after writing `t`.
fn written_soon(t: &Fid<'_>, next: &[FidEvent<'_>]) -> bool {
    next.iter().take(WRITE_LOOKAHEAD).any(|e| {
        e.mask & (FAN_MODIFY | FAN_CLOSE_WRITE) != 0
            && e.target.is_some_and(|x| {
                x.handle == t.handle && x.handle_type == t.handle_type && x.fsid == t.fsid
            })
    })
}

fn id(f: &Fid<'_>) -> ObjectId {
    ObjectId::from_fid(f)
}

impl Root {
    /// Whether the event concerns this root's filesystem.
    pub(crate) fn owns(&self, ev: &FidEvent<'_>) -> bool {
        let fsid = ev
            .dir_name
            .map(|d| d.dir.fsid)
            .or(ev.old.map(|d| d.dir.fsid))
            .or(ev.target.map(|t| t.fsid));
        fsid == Some(self.fsid)
    }

    /// Handles one event; `next` are the events read after it, for a
    /// rename's exchange; `gone` are the objects whose last name went
    /// (`FAN_DELETE_SELF`) in the same read.
    pub(crate) fn on_event(
        &mut self,
        ev: &FidEvent<'_>,
        next: &[FidEvent<'_>],
        gone: &Gone,
        sink: &mut Sink,
    ) -> Handled {
        let mut h = Handled::default();
        if self.ended.is_some() {
            return h;
        }
        if let Some(rounds) = self.ends_with(ev, sink) {
            h.released = rounds;
            return h;
        }
        if ev.mask & FAN_DELETE_SELF != 0
            && let Some(t) = ev.target
        {
            self.touches.dead(&id(&t));
        }
        let isdir = ev.mask & FAN_ONDIR != 0;
        if ev.mask & FAN_RENAME != 0 {
            if let (Some(old), Some(new), Some(t)) = (ev.old, ev.new, ev.target) {
                h.consumed = self.rename(
                    (id(&old.dir), old.name),
                    (id(&new.dir), new.name),
                    id(&t),
                    isdir,
                    next,
                    sink,
                );
            }
            return h;
        }
        let bits = ev.mask & (FAN_CREATE | FAN_DELETE);
        if bits != 0
            && let (Some(dn), Some(t)) = (ev.dir_name, ev.target)
        {
            let dir = id(&dn.dir);
            if !self.tree.has_dir(&dir) {
                self.counters.outside += 1;
                return h;
            }
            self.counters.events += 1;
            if dir == self.id && is_cookie(dn.name) {
                if bits & FAN_CREATE != 0 {
                    h.cookie_round = self.cookies.get(dn.name).copied();
                }
                if bits & FAN_DELETE != 0 {
                    self.cookies.remove(dn.name);
                }
                return h;
            }
            // Opened for writing by its creator: said by this event
            // (merged) or by one of the next few, before a probe.
            let written = ev.mask & (FAN_MODIFY | FAN_CLOSE_WRITE) != 0
                || (bits == FAN_CREATE && !isdir && written_soon(&t, next));
            let t = id(&t);
            let d = Dirent {
                dir: &dir,
                name: dn.name,
                // An object whose last name went in this read is nowhere
                // now: no need to look.
                gone: gone.contains(&t),
                t,
                isdir,
                bits,
                written,
            };
            self.entry_event(&d, sink);
        }
        if ev.mask & (FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE) != 0 {
            self.inode_event(ev, sink);
        }
        h
    }

    /// A CREATE and/or DELETE of an entry of a directory in the tree.
    fn entry_event(&mut self, d: &Dirent<'_>, sink: &mut Sink) {
        let (dir, name, t) = (d.dir, d.name, &d.t);
        let prior = self.tree.lookup(dir, name).map(|e| e.id);
        match (d.bits, prior) {
            (FAN_CREATE, None) => {
                self.touch(dir, name, t);
                self.create(d, How::Event, sink);
            }
            (FAN_CREATE, Some(p)) if &p == t => self.touch(dir, name, t),
            (FAN_DELETE, Some(p)) if &p == t => {
                self.touch(dir, name, t);
                self.remove(dir, name, How::Event, sink);
            }
            (FAN_DELETE, None) => {}
            _ => {
                self.settle(d, sink);
                self.touch(dir, name, t);
            }
        }
    }

    /// Logs the new name of an entry event.
    fn create(&mut self, d: &Dirent<'_>, how: How, sink: &mut Sink) {
        let (dir, name, t) = (d.dir, d.name, &d.t);
        let known = !d.isdir && self.tree.links(t) > 0;
        let kind = if d.isdir {
            Kind::Dir
        } else if d.written && !known {
            // Opened for writing by its creator before weir read the
            // event: a regular file (devices and FIFOs are made by
            // mknod, which does not open them).
            Kind::File
        } else if d.gone {
            Kind::Unknown
        } else {
            match self.probe.kind_of(dir, name, t) {
                Kind::Unknown => self.probe.kind_by_handle(t),
                k => k,
            }
        };
        self.emit(
            Change::Create {
                parent: dir.clone(),
                name: name.to_vec(),
                entry: Entry {
                    id: t.clone(),
                    kind,
                },
                link: known,
            },
            how,
            sink,
        );
        if d.isdir && self.fstype == "btrfs" && self.probe.is_subvolume_root(t) {
            // A new subvolume or snapshot: btrfs reports one event and
            // nothing of the contents a snapshot brings.
            self.adopt(t, How::Compare, sink);
        }
    }

    /// Logs the removal of `name` in `dir` (in the tree): a directory's
    /// remaining entries first (a subvolume deleted whole reports only
    /// itself).
    pub(crate) fn remove(&mut self, dir: &ObjectId, name: &[u8], how: How, sink: &mut Sink) {
        let Some(e) = self.tree.lookup(dir, name) else {
            return;
        };
        if e.kind.is_dir() {
            let children: Vec<Box<[u8]>> = self
                .tree
                .entries_of(&e.id)
                .map(|(n, _)| Box::from(n))
                .collect();
            for c in children {
                let sub = if how == How::Event {
                    How::Verified
                } else {
                    how
                };
                self.remove(&e.id, &c, sub, sink);
            }
        }
        let last = e.kind.is_dir() || self.tree.links(&e.id) <= 1;
        self.emit(
            Change::Remove {
                parent: dir.clone(),
                name: name.to_vec(),
                entry: e,
                last,
            },
            how,
            sink,
        );
    }

    /// An entry event that is ambiguous or at odds with the tree, settled:
    /// the entry brought to its live state as far as the event's object is
    /// concerned, with the event's bits to tell a brief life (created and
    /// removed) from none.
    fn settle(&mut self, d: &Dirent<'_>, sink: &mut Sink) {
        let (dir, name, t, isdir, bits) = (d.dir, d.name, &d.t, d.isdir, d.bits);
        let live = if d.gone && self.tree.lookup(dir, name).is_none_or(|e| &e.id == t) {
            Found::Absent
        } else {
            match self.probe.lookup(dir, name) {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(error = %e, "looking at an entry failed; taking the event as it is");
                    Found::Absent
                }
            }
        };
        let live_id = match &live {
            Found::Entry(e) => Some(&e.id),
            Found::Absent => None,
        };
        let mut prior = self.tree.lookup(dir, name).map(|e| e.id);
        if let Some(p) = prior.as_ref().filter(|p| *p != t) {
            if live_id == Some(p) {
                // The tree's entry is the live one: the event is about an
                // earlier occupant of the name.
                return;
            }
            self.remove(dir, name, How::Verified, sink);
            prior = None;
        }
        let live_t = live_id == Some(t);
        match (prior.is_some(), live_t) {
            (false, true) => {
                let kind = match &live {
                    Found::Entry(e) => e.kind,
                    Found::Absent => Kind::Unknown,
                };
                let link = !isdir && self.tree.links(t) > 0;
                self.emit(
                    Change::Create {
                        parent: dir.clone(),
                        name: name.to_vec(),
                        entry: Entry {
                            id: t.clone(),
                            kind,
                        },
                        link,
                    },
                    How::Verified,
                    sink,
                );
                if isdir {
                    // Whatever it holds by now, its events may be merged
                    // away: read it.
                    self.adopt(t, How::Verified, sink);
                }
            }
            (false, false) => {
                if bits & FAN_CREATE != 0 && live_id.is_none() {
                    self.create(d, How::Verified, sink);
                    self.remove(dir, name, How::Verified, sink);
                }
            }
            (true, false) => self.remove(dir, name, How::Verified, sink),
            (true, true) => {
                if bits & FAN_DELETE != 0 && !isdir {
                    self.remove(dir, name, How::Verified, sink);
                    self.create(d, How::Verified, sink);
                }
            }
        }
    }

    /// A rename of `t` from `old` to `new`; returns the index in `next` of
    /// its exchange mirror, when it was one.
    fn rename(
        &mut self,
        old: (ObjectId, &[u8]),
        new: (ObjectId, &[u8]),
        t: ObjectId,
        isdir: bool,
        next: &[FidEvent<'_>],
        sink: &mut Sink,
    ) -> Option<usize> {
        let (od, on) = old;
        let (nd, nn) = new;
        let (in_old, in_new) = (self.tree.has_dir(&od), self.tree.has_dir(&nd));
        if !in_old && !in_new {
            self.counters.outside += 1;
            return None;
        }
        self.counters.events += 1;
        let here = |e: Option<Entry>| e.map(|e| e.id);
        let prior_old = here(self.tree.lookup(&od, on));
        let prior_new = here(self.tree.lookup(&nd, nn));
        match (in_old, in_new) {
            (true, false) => {
                if prior_old.as_ref() == Some(&t) {
                    let kind = self.tree.lookup(&od, on).map_or(Kind::Unknown, |e| e.kind);
                    self.emit(
                        Change::MoveOut {
                            sparent: od,
                            sname: on.to_vec(),
                            parent: nd,
                            name: nn.to_vec(),
                            entry: Entry { id: t, kind },
                        },
                        How::Event,
                        sink,
                    );
                }
                None
            }
            (false, true) => {
                if prior_new.as_ref() == Some(&t) {
                    return None;
                }
                if prior_new.is_some() {
                    self.remove(&nd, nn, How::Verified, sink);
                }
                let kind = if isdir {
                    Kind::Dir
                } else {
                    self.probe.kind_by_handle(&t)
                };
                self.emit(
                    Change::MoveIn {
                        sparent: od,
                        sname: on.to_vec(),
                        parent: nd,
                        name: nn.to_vec(),
                        entry: Entry {
                            id: t.clone(),
                            kind,
                        },
                    },
                    How::Event,
                    sink,
                );
                if isdir {
                    self.adopt(&t, How::Compare, sink);
                }
                None
            }
            _ => {
                self.touch(&od, on, &t);
                self.touch(&nd, nn, &t);
                if prior_old.as_ref() == Some(&t) {
                    let entry = self.tree.lookup(&od, on).unwrap_or(Entry {
                        id: t.clone(),
                        kind: Kind::Unknown,
                    });
                    let mirror = prior_new.as_ref().filter(|x| **x != t).and_then(|x| {
                        next.iter().take(EXCHANGE_LOOKAHEAD).position(|e| {
                            e.mask & FAN_RENAME != 0
                                && e.target.is_some_and(|f| id(&f) == *x)
                                && e.old.is_some_and(|o| id(&o.dir) == nd && o.name == nn)
                                && e.new.is_some_and(|n| id(&n.dir) == od && n.name == on)
                        })
                    });
                    let there = self.tree.lookup(&nd, nn).filter(|x| x.id != t);
                    // The mirror of an exchange may be in the next read:
                    // near the end of this one, the old name holding the
                    // displaced entry says it was one (the mirror is then
                    // skipped as already reflected).
                    let late_mirror = mirror.is_none()
                        && next.len() < EXCHANGE_LOOKAHEAD
                        && there.as_ref().is_some_and(|x| {
                            matches!(self.probe.lookup(&od, on), Ok(Found::Entry(e)) if e.id == x.id)
                        });
                    let (mut overwritten, exchanged) =
                        match (mirror.is_some() || late_mirror, there) {
                            (true, Some(x)) => (None, Some(x)),
                            (false, Some(x)) => {
                                let last = x.kind.is_dir() || self.tree.links(&x.id) <= 1;
                                (Some((x, last)), None)
                            }
                            (_, None) => (None, None),
                        };
                    if overwritten.as_ref().is_some_and(|(x, _)| x.kind.is_dir()) {
                        // A directory replaced by a rename was empty: the
                        // removals of whatever the tree still holds in it
                        // come first, as for an RMDIR, then the rename.
                        self.remove(&nd, nn, How::Verified, sink);
                        overwritten = None;
                    }
                    let c = Change::Rename {
                        sparent: od,
                        sname: on.to_vec(),
                        parent: nd,
                        name: nn.to_vec(),
                        entry,
                        overwritten,
                        exchanged,
                    };
                    self.emit(c, How::Event, sink);
                    mirror
                } else if prior_new.as_ref() == Some(&t) {
                    None
                } else {
                    let entries = [(od, Box::from(on)), (nd, Box::from(nn))];
                    self.verify(&entries, sink, false);
                    None
                }
            }
        }
    }

    /// ATTRIB, MODIFY and CLOSE_WRITE of the event's target.
    fn inode_event(&mut self, ev: &FidEvent<'_>, sink: &mut Sink) {
        let Some(dn) = ev.dir_name else {
            // A link count's change carries the object alone; its entry
            // records say it already.
            return;
        };
        let d = id(&dn.dir);
        // An event on a directory itself names it "." in itself and
        // carries no other id.
        let t = match ev.target {
            Some(t) => id(&t),
            None if dn.name == b"." => d.clone(),
            None => return,
        };
        let (parent, name) = if dn.name == b"." || d == t {
            if t == self.id {
                (self.id.clone(), Vec::new())
            } else {
                match self.tree.location(&t) {
                    Some((p, n)) => (p, n.to_vec()),
                    None => {
                        self.counters.outside += 1;
                        return;
                    }
                }
            }
        } else {
            (d, dn.name.to_vec())
        };
        if !self.tree.has_dir(&parent) || !(t == self.id || self.tree.contains(&t)) {
            self.counters.outside += 1;
            return;
        }
        if parent == self.id && is_cookie(&name) {
            return;
        }
        if ev.mask & FAN_ATTRIB != 0 {
            self.emit(
                Change::Attr {
                    parent: parent.clone(),
                    name: name.clone(),
                    id: t.clone(),
                },
                How::Event,
                sink,
            );
        }
        if ev.mask & FAN_MODIFY != 0 {
            self.dirty.entry(t.clone()).or_insert_with(|| Dirty {
                parent: parent.clone(),
                name: name.clone(),
                since: Instant::now(),
            });
        }
        if ev.mask & FAN_CLOSE_WRITE != 0 && self.dirty.remove(&t).is_some() {
            self.emit(
                Change::Modify {
                    parent,
                    name,
                    id: t,
                },
                How::Event,
                sink,
            );
        }
    }

    /// Logs an MTIME for each file written and still open for longer than
    /// `interval`; returns when the next one is due.
    pub(crate) fn flush_dirty(
        &mut self,
        interval: std::time::Duration,
        sink: &mut Sink,
    ) -> Option<Instant> {
        if self.dirty.is_empty() {
            return None;
        }
        let now = Instant::now();
        let due: Vec<ObjectId> = self
            .dirty
            .iter()
            .filter(|(_, d)| now.duration_since(d.since) >= interval)
            .map(|(k, _)| k.clone())
            .collect();
        for t in due {
            if let Some(d) = self.dirty.remove(&t)
                && self.tree.contains(&t)
            {
                self.emit(
                    Change::Modify {
                        parent: d.parent,
                        name: d.name,
                        id: t,
                    },
                    How::Event,
                    sink,
                );
            }
        }
        self.dirty.values().map(|d| d.since + interval).min()
    }
}
