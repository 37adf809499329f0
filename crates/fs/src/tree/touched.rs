//! Which directories changed since a checkpoint last took them, and which
//! were removed: what a persistent copy of the tree must rewrite.
//!
//! A checkpoint rewrites a directory whole (its location and its
//! entries), so one bit per directory slot is all the tree keeps, set at
//! the two places an entry joins or leaves a directory's list, whatever
//! change did it: a directory is touched when an entry is linked into or
//! unlinked from it, and when it is itself linked somewhere (created or
//! moved). Removed directories are kept by id, since their slots are
//! reused; a persistent copy drops each one with its entries.
//!
//! A second bit per slot says the copy holds the directory without its
//! times: it was taken while they were forgotten (a change applied since
//! they were last taken). Until a stop takes times again for it, every
//! restart would read it; so the stop counts it as touched too.
//!
//! The tree's methods that keep touches and take them are here as well.

use super::{DirImage, NIL, Tree};
use crate::id::ObjectId;

/// A set of directory slots.
#[derive(Clone, Debug, Default)]
struct Slots {
    bits: Vec<u64>,
    count: usize,
}

impl Slots {
    fn mark(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, d % 64);
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.count += 1;
        }
    }

    fn clear(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, d % 64);
        if let Some(word) = self.bits.get_mut(w)
            && *word & (1 << b) != 0
        {
            *word &= !(1 << b);
            self.count -= 1;
        }
    }

    fn next_from(&self, from: u32) -> Option<u32> {
        let mut w = from as usize / 64;
        let mut word = *self.bits.get(w)? & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some((w * 64) as u32 + word.trailing_zeros());
            }
            w += 1;
            word = *self.bits.get(w)?;
        }
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.next_from(0), |&d| self.next_from(d + 1))
    }
}

/// The touched directory slots, those the copy holds without times, and
/// the removed directories' ids.
#[derive(Clone, Debug, Default)]
pub(super) struct Touched {
    touched: Slots,
    untimed: Slots,
    pub(super) removed: Vec<ObjectId>,
}

impl Touched {
    /// Marks directory slot `d`.
    pub(super) fn mark(&mut self, d: u32) {
        self.touched.mark(d);
    }

    /// Clears directory slot `d`, taken.
    pub(super) fn clear(&mut self, d: u32) {
        self.touched.clear(d);
    }

    /// Forgets directory slot `d`, freed: neither touched nor untimed.
    pub(super) fn free(&mut self, d: u32) {
        self.touched.clear(d);
        self.untimed.clear(d);
    }

    /// Records whether the copy now holds slot `d` with its times.
    pub(super) fn taken_with_times(&mut self, d: u32, timed: bool) {
        if timed {
            self.untimed.clear(d);
        } else {
            self.untimed.mark(d);
        }
    }

    /// Counts slot `d` as held by the copy without times.
    pub(super) fn mark_untimed(&mut self, d: u32) {
        self.untimed.mark(d);
    }

    /// Touched slots.
    pub(super) fn count(&self) -> usize {
        self.touched.count
    }

    /// The lowest touched slot at or above `from`.
    pub(super) fn next_from(&self, from: u32) -> Option<u32> {
        self.touched.next_from(from)
    }

    /// Every touched slot, in order.
    pub(super) fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.touched.iter()
    }

    /// Every slot the copy holds without times, in order.
    pub(super) fn untimed(&self) -> impl Iterator<Item = u32> + '_ {
        self.untimed.iter()
    }
}

/// A tree's touches: what a persistent copy takes from it.
impl Tree {
    /// From now on, keeps which directories change and which are removed
    /// (for [`Tree::take_touched`]); with `all`, every directory counts as
    /// touched at first, so that the first take is the whole tree. Without
    /// it the tree is the persistent copy's, times included: a directory
    /// without times is one the copy holds without them.
    pub fn track_touches(&mut self, all: bool) {
        let mut t = Touched::default();
        for d in 0..self.store.dir_slots() {
            if !self.store.is_live_dir(d) {
                continue;
            }
            if all {
                t.mark(d);
            } else if self.times.get(d).is_none() {
                t.mark_untimed(d);
            }
        }
        self.touched = Some(t);
    }

    /// Counts every directory that the copy holds without times (taken
    /// while they were forgotten) as touched: a stop, about to take times
    /// for the touched directories, then takes them for these too, and a
    /// restart need not read them. Returns how many it added.
    pub fn touch_untimed(&mut self) -> usize {
        let Some(t) = self.touched.as_mut() else {
            return 0;
        };
        let untimed: Vec<u32> = t.untimed().collect();
        let before = t.count();
        for d in untimed {
            if self.store.is_live_dir(d) {
                t.mark(d);
                self.times.take(d);
            }
        }
        t.count() - before
    }

    /// Counts directory `dir` as touched (when touches are tracked), its
    /// times forgotten: the next checkpoint takes it, and a stop its times.
    pub fn touch_dir(&mut self, dir: &ObjectId) {
        if let (Some(d), Some(t)) = (self.dir(dir), self.touched.as_mut()) {
            t.mark(d);
            self.times.take(d);
        }
    }

    /// The ids of the directories touched and not yet taken.
    pub fn touched_ids(&self) -> Vec<ObjectId> {
        self.touched.as_ref().map_or_else(Vec::new, |t| {
            t.slots()
                .filter(|&d| self.store.is_live_dir(d))
                .map(|d| self.store.id(&self.store.dir(d).node))
                .collect()
        })
    }

    /// Directories touched and not yet taken.
    pub fn touched_dirs(&self) -> usize {
        self.touched.as_ref().map_or(0, Touched::count)
    }

    /// Appends to `out` the images of touched directories, until they hold
    /// `max_entries` entries (at least one directory when any is touched),
    /// and counts them as taken; returns how many it took.
    pub fn take_touched(&mut self, max_entries: usize, out: &mut Vec<DirImage>) -> usize {
        let Some(mut t) = self.touched.take() else {
            return 0;
        };
        let (mut dirs, mut entries) = (0, 0);
        let mut at = 0;
        while entries < max_entries.max(1)
            && let Some(d) = t.next_from(at)
        {
            at = d + 1;
            t.clear(d);
            if !self.store.is_live_dir(d) {
                continue;
            }
            let image = self.image(d);
            t.taken_with_times(d, image.times.is_some());
            self.times.take(d);
            entries += image.entries.len().max(1);
            out.push(image);
            dirs += 1;
        }
        self.touched = Some(t);
        dirs
    }

    /// The directories removed since this was last called (some perhaps
    /// never taken), when touches are tracked.
    pub fn take_removed(&mut self) -> Vec<ObjectId> {
        self.touched
            .as_mut()
            .map_or_else(Vec::new, |t| std::mem::take(&mut t.removed))
    }

    pub(super) fn image(&self, d: u32) -> DirImage {
        let dir = self.store.dir(d);
        let location = (dir.node.parent != NIL).then(|| {
            let parent = self.store.id(&self.store.dir(dir.node.parent).node);
            (parent, Box::from(self.store.name(&dir.node)))
        });
        DirImage {
            id: self.store.id(&dir.node),
            times: self.times.get(d),
            location,
            entries: self
                .children(dir.child)
                .map(|r| {
                    (
                        Box::from(self.store.name(self.store.node(r))),
                        self.store.entry(r),
                    )
                })
                .collect(),
        }
    }
}
