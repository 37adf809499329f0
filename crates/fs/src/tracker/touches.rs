//! The entries events touched since the queue was last found empty, and
//! which of them must be looked at again.
//!
//! The kernel merges an event into a queued one of the same object, name
//! and kind, so an entry touched twice in one drain may have lost an event
//! in between (a link, an unlink and a link again of one file read as a
//! link and an unlink). Such an entry is *doubtful*: when the queue is
//! empty it is looked at through its directory's handle.
//!
//! One doubt needs no look: an entry only one object touched, whose last
//! link went in this drain (`FAN_DELETE_SELF`), and that the tree holds
//! empty. An event merged away could only have been about that object
//! (an event is merged only into one of the same object), and a dead
//! object is at no name, so the entry is empty as logged. That is every
//! file a load creates and removes at once, which would otherwise cost a
//! `statx` each.

use std::hash::BuildHasher;

use crate::id::ObjectId;
use crate::tree::{Map, Set};

/// An entry by its directory and name.
pub(crate) type EntryKey = (ObjectId, Box<[u8]>);

/// How many drains a look may be put off while the object is seen moving.
const MAX_DEFER: u32 = 3;

/// The touches of one entry in one drain.
#[derive(Debug)]
struct Touch {
    /// The object of the last touch.
    id: ObjectId,
    /// How often it was touched by that object in a row.
    times: u32,
    /// Whether another object touched it first.
    mixed: bool,
}

/// The touches of one root's entries in the current drain.
#[derive(Debug, Default)]
pub(crate) struct Touches {
    /// By a hash of directory and name, so a touch costs no allocation. A
    /// collision joins two entries' touches: it can only make an entry
    /// doubtful (or mixed), never spare one a look.
    by_entry: Map<u64, Touch>,
    /// The entries touched twice, or by two objects, in touch order.
    doubtful: Vec<EntryKey>,
    /// The objects whose last link went in this drain.
    dead: Set<ObjectId>,
    /// Entries whose look was put off, with how many times.
    deferred: Map<EntryKey, u32>,
}

impl Touches {
    fn key(&self, dir: &ObjectId, name: &[u8]) -> u64 {
        self.by_entry.hasher().hash_one((dir.as_bytes(), name))
    }

    /// Notes an event's touch of entry `name` in `dir` by `id`.
    pub(crate) fn touch(&mut self, dir: &ObjectId, name: &[u8], id: &ObjectId) {
        let key = self.key(dir, name);
        let t = self.by_entry.entry(key).or_insert_with(|| Touch {
            id: id.clone(),
            times: 0,
            mixed: false,
        });
        // Two objects at one name are doubtful too.
        let times = if &t.id == id {
            t.times + 1
        } else {
            t.id = id.clone();
            t.mixed = true;
            2
        };
        if times == 2 {
            self.doubtful.push((dir.clone(), Box::from(name)));
        }
        t.times = times;
    }

    /// Notes that `id`'s last link went (`FAN_DELETE_SELF`).
    pub(crate) fn dead(&mut self, id: &ObjectId) {
        self.dead.insert(id.clone());
    }

    /// Whether entry `name` in `dir`, which the tree holds empty, is empty
    /// live too without a look: only one object touched it in this drain,
    /// and that object's last link went.
    pub(crate) fn empty_for_sure(&self, dir: &ObjectId, name: &[u8]) -> bool {
        self.by_entry
            .get(&self.key(dir, name))
            .is_some_and(|t| !t.mixed && self.dead.contains(&t.id))
    }

    /// Whether an event touched entry `name` in `dir` in this drain: the
    /// object there is still moving.
    pub(crate) fn moving(&self, dir: &ObjectId, name: &[u8]) -> bool {
        self.by_entry.contains_key(&self.key(dir, name))
    }

    /// Entries touched, for the bound on a drain's memory.
    pub(crate) fn len(&self) -> usize {
        self.by_entry.len()
    }

    /// Whether there is nothing to look at or forget.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_entry.is_empty() && self.doubtful.is_empty() && self.dead.is_empty()
    }

    /// The doubtful entries, handed over to be looked at.
    pub(crate) fn take_doubtful(&mut self) -> Vec<EntryKey> {
        std::mem::take(&mut self.doubtful)
    }

    /// Puts the look at an entry off to the next drain: while events keep
    /// touching it, and otherwise a few times at most; `false` when it has
    /// been put off enough.
    pub(crate) fn defer(&mut self, dir: &ObjectId, name: &[u8]) -> bool {
        let moving = self.moving(dir, name);
        let k = (dir.clone(), Box::from(name));
        let rounds = self.deferred.entry(k.clone()).or_insert(0);
        if !moving && *rounds >= MAX_DEFER {
            self.deferred.remove(&k);
            return false;
        }
        *rounds += 1;
        self.doubtful.push(k);
        true
    }

    /// The drain is over: its touches are forgotten (the doubtful entries
    /// and the deferrals stay).
    pub(crate) fn end_drain(&mut self) {
        self.by_entry.clear();
        self.dead.clear();
    }

    /// Forgets everything: the events were lost, or the watch ended.
    pub(crate) fn clear(&mut self) {
        self.end_drain();
        self.doubtful.clear();
        self.deferred.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_parts(&[n; crate::id::HEADER], &[n, 1, 2, 3, 4, 5, 6, 7])
    }

    #[test]
    fn an_entry_touched_twice_is_doubtful_once() {
        let (d, f) = (id(1), id(2));
        let mut t = Touches::default();
        t.touch(&d, b"a", &f);
        assert!(t.take_doubtful().is_empty());
        t.touch(&d, b"a", &f);
        t.touch(&d, b"a", &f);
        assert_eq!(t.take_doubtful(), vec![(d.clone(), Box::from(&b"a"[..]))]);
        assert!(t.moving(&d, b"a"));
        assert!(!t.moving(&d, b"b"));
    }

    #[test]
    fn two_objects_at_one_name_are_doubtful_and_never_sure() {
        let (d, f, g) = (id(1), id(2), id(3));
        let mut t = Touches::default();
        t.touch(&d, b"a", &f);
        t.touch(&d, b"a", &g);
        assert_eq!(t.take_doubtful().len(), 1);
        t.dead(&f);
        t.dead(&g);
        // g may have hidden an event of f's, or f one of g's.
        assert!(!t.empty_for_sure(&d, b"a"));
    }

    #[test]
    fn one_dead_object_leaves_its_entry_empty_for_sure() {
        let (d, f) = (id(1), id(2));
        let mut t = Touches::default();
        t.touch(&d, b"a", &f);
        t.touch(&d, b"a", &f);
        assert!(!t.empty_for_sure(&d, b"a"), "alive: it may be back");
        t.dead(&f);
        assert!(t.empty_for_sure(&d, b"a"));
        assert!(!t.empty_for_sure(&d, b"b"), "never touched");
        t.end_drain();
        assert!(!t.empty_for_sure(&d, b"a"), "a new drain knows nothing");
    }

    #[test]
    fn a_look_is_put_off_a_few_times_unless_moving() {
        let (d, f) = (id(1), id(2));
        let mut t = Touches::default();
        for _ in 0..MAX_DEFER {
            assert!(t.defer(&d, b"a"));
        }
        assert!(!t.defer(&d, b"a"));
        t.touch(&d, b"a", &f);
        for _ in 0..10 {
            assert!(t.defer(&d, b"a"), "still moving");
        }
        t.clear();
        assert!(t.is_empty());
    }
}
