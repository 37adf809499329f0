//! The tree: a watched directory's entries, by id, as the records describe
//! them.
//!
//! One model serves three users: the tracker (what it has logged so far,
//! to tell what an event changed), a replay of records (a consumer's view,
//! and the tracker's own view at a restart) and a walk of the live tree
//! (to compare with). Every entry is a node holding its parent, its name
//! and its id; a directory's node also heads the list of its entries, and
//! the tree counts a non-directory's names so that a removal knows whether
//! it was the last. A directory's path is found by walking up, so a rename
//! of a directory is one update, whatever lies below it.
//!
//! The tracker holds a tree of every watched file for as long as it runs
//! (a million files is a common size), so the layout is compact: 52 bytes
//! an entry by RSS (58 counting unused capacity) on a tree of 1.1 million
//! entries with 8-byte names and ext4 handles, where maps of ids and names
//! took 252 (`examples/tree_size.rs` measures it):
//! - nodes are 32 bytes (36 for a directory) in slabs, linked by `u32`
//!   indexes: to their parent, and to their siblings both ways, so that a
//!   directory's entries can be listed and any of them unlinked at once;
//! - a node holds its name and handle bytes itself when they fit in 16
//!   bytes, and a byte arena the rest, so most comparisons read no other
//!   line; an id's 12-byte prefix (fsid and handle type) is interned in a
//!   class table, since a tree has one or two;
//! - the indexes (by directory and name, by directory id, by file id) are
//!   hash tables of bare `u32` node indexes, reading their keys from the
//!   nodes, so no key is held twice; a hard link's other names are kept
//!   beside its first.
//!
//! The price is a dependent load more per table than maps with their keys
//! inline: a lookup of a name in a cold tree reads about six cache lines.
//!
//! With [`Tree::track_touches`] the tree also keeps which directories
//! changed (a bit per directory slot) and which were removed, so that a
//! persistent copy rewrites only those ([`Tree::take_touched`]).
//!
//! Garbage is bounded under churn: the arena is copied once half of it is
//! dead, and the whole tree rebuilt once three quarters of its slots are
//! free. Limits (each refused with [`TreeError::Full`], never wrapped):
//! 2^31 - 1 directories and as many other entries, 4 GiB of names and
//! handles, 65,535 distinct id prefixes; and a name is at most 255 bytes
//! (Linux's `NAME_MAX`).

use std::collections::BTreeMap;
use std::fmt;

/// The trees' maps: keyed by ids and names, hashed fast (foldhash, seeded
/// per process).
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A set, hashed as [`Map`].
pub(crate) type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

use crate::id::ObjectId;
use crate::kind::Kind;

mod index;
mod store;
mod times;
mod touched;

use index::Index;
use store::{NAME_MAX, NIL, Ref, Store};
pub use times::DirTimes;
use times::Times;
use touched::Touched;

/// An entry: the object a name points at, and what it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The object's id.
    pub id: ObjectId,
    /// Its type.
    pub kind: Kind,
}

/// A directory as a persistent copy of the tree stores it: its location
/// and every entry, as of when it was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DirImage {
    /// The directory's id.
    pub id: ObjectId,
    /// Its parent and name; `None` for the root.
    pub location: Option<(ObjectId, Box<[u8]>)>,
    /// Its entries, by name.
    pub entries: Vec<(Box<[u8]>, Entry)>,
    /// Its times, if they describe these entries (see [`DirTimes`]).
    pub times: Option<DirTimes>,
}

/// Why a change does not apply to a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The parent directory is not in the tree.
    #[error("the parent directory is not in the tree")]
    NoParent,
    /// A rename's source name is not in the tree.
    #[error("the source entry is not in the tree")]
    NoSource,
    /// A directory would move below itself.
    #[error("a directory cannot move below itself")]
    IntoItself,
    /// The name is longer than 255 bytes.
    #[error("the name is longer than 255 bytes")]
    NameTooLong,
    /// The tree holds as many entries, name bytes or id prefixes as it can.
    #[error("the tree is full")]
    Full,
}

/// When a tree tidies itself (garbage below these is not worth a copy),
/// and when a directory's children go in the name table.
#[derive(Clone, Copy, Debug)]
struct Limits {
    /// Dead arena bytes.
    garbage: usize,
    /// Slots, live and free.
    slots: usize,
    /// The children a directory has at most before they go in the name
    /// table (see `index`).
    list_max: u32,
}

const LIMITS: Limits = Limits {
    garbage: 64 << 10,
    slots: 4096,
    list_max: index::LIST_MAX,
};

/// The root directory's index.
const ROOT: u32 = 0;

/// A watched tree: the root directory and everything below it.
#[derive(Clone)]
pub struct Tree {
    root: ObjectId,
    store: Store,
    index: Index,
    entries: usize,
    limits: Limits,
    /// With [`Tree::track_touches`], what changed since it was last taken.
    touched: Option<Touched>,
    times: Times,
}

impl fmt::Debug for Tree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tree")
            .field("root", &self.root)
            .field("entries", &self.listing())
            .finish()
    }
}

fn check_name(name: &[u8]) -> Result<(), TreeError> {
    if name.len() > NAME_MAX {
        return Err(TreeError::NameTooLong);
    }
    Ok(())
}

impl Tree {
    /// An empty tree whose root directory is `root`.
    pub fn new(root: ObjectId) -> Tree {
        Tree::with_limits(root, LIMITS)
    }

    fn with_limits(root: ObjectId, limits: Limits) -> Tree {
        let store = Store::new(&root);
        let mut index = Index::new(limits.list_max);
        index.add_dir(&store, ROOT);
        Tree {
            root,
            store,
            index,
            entries: 0,
            limits,
            touched: None,
            times: Times::default(),
        }
    }

    /// Makes room for `dirs` directories and `files` other entries in all
    /// (a tree about to be loaded whole, its size known), so that loading
    /// it never grows a slab or an id table on the way.
    pub(crate) fn reserve(&mut self, dirs: usize, files: usize) {
        let more_dirs = dirs.saturating_sub(self.store.dir_count());
        let more_files = files.saturating_sub(self.store.file_count());
        self.store.reserve_nodes(dirs, files);
        self.index.reserve(&self.store, more_dirs, more_files);
    }

    /// Sets directory `dir`'s times, as `statx` gave them before its
    /// entries were read; `false` for an unknown directory.
    pub fn set_dir_times(&mut self, dir: &ObjectId, t: DirTimes) -> bool {
        match self.dir(dir) {
            Some(d) => {
                self.times.set(d, t);
                true
            }
            None => false,
        }
    }

    /// Directory `dir`'s times, while they describe its entries.
    pub fn dir_times(&self, dir: &ObjectId) -> Option<DirTimes> {
        self.times.get(self.dir(dir)?)
    }

    /// The root directory's id.
    pub fn root(&self) -> &ObjectId {
        &self.root
    }

    /// Whether `id` is a directory of the tree (the root included).
    pub fn has_dir(&self, id: &ObjectId) -> bool {
        self.dir(id).is_some()
    }

    /// The entry `name` in directory `parent`.
    pub fn lookup(&self, parent: &ObjectId, name: &[u8]) -> Option<Entry> {
        self.find(parent, name).map(|r| self.store.entry(r))
    }

    /// How many names the non-directory `id` has in the tree.
    pub fn links(&self, id: &ObjectId) -> u32 {
        self.index.links(&self.store, id)
    }

    /// Whether `id` is in the tree, as a directory or under some name.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.has_dir(id) || self.links(id) > 0
    }

    /// Every entry below the root, the root itself not counted.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether the root is empty.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The directories, the root included.
    pub fn dir_count(&self) -> usize {
        self.store.dirs()
    }

    /// The bytes the tree holds on the heap: its slabs', arena's and
    /// tables' allocations (what a big tree costs).
    pub fn heap_bytes(&self) -> usize {
        self.store.heap_bytes() + self.index.heap_bytes()
    }

    /// A directory's parent and name; `None` for the root or an unknown id.
    pub fn location(&self, dir: &ObjectId) -> Option<(ObjectId, &[u8])> {
        let n = &self.store.dir(self.dir(dir)?).node;
        if n.parent == NIL {
            return None;
        }
        let parent = self.store.id(&self.store.dir(n.parent).node);
        Some((parent, self.store.name(n)))
    }

    /// The entries of directory `dir` (none for an unknown one).
    pub fn entries_of(&self, dir: &ObjectId) -> impl Iterator<Item = (&[u8], Entry)> {
        let first = self.dir(dir).map_or(Ref::NONE, |d| self.store.dir(d).child);
        self.children(first)
            .map(|r| (self.store.name(self.store.node(r)), self.store.entry(r)))
    }

    /// Whether `above` is `dir` or one of its ancestors.
    pub fn is_ancestor(&self, above: &ObjectId, dir: &ObjectId) -> bool {
        if above == dir {
            return true;
        }
        // Only directories are ancestors.
        match (self.dir(above), self.dir(dir)) {
            (Some(a), Some(d)) => self.above(a, d),
            _ => false,
        }
    }

    /// Directory `dir`'s path relative to the root (`""` for the root),
    /// appended to `out`; `false` (and `out` as it was) for an unknown id.
    pub fn dir_path(&self, dir: &ObjectId, out: &mut Vec<u8>) -> bool {
        let Some(mut d) = self.dir(dir) else {
            return false;
        };
        let mut chain = Vec::new();
        loop {
            let n = &self.store.dir(d).node;
            if n.parent == NIL {
                break;
            }
            chain.push(d);
            d = n.parent;
        }
        for (i, &d) in chain.iter().rev().enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            out.extend_from_slice(self.store.name(&self.store.dir(d).node));
        }
        true
    }

    /// The path of entry `name` in `parent`, appended to `out`.
    pub fn entry_path(&self, parent: &ObjectId, name: &[u8], out: &mut Vec<u8>) -> bool {
        let start = out.len();
        if !self.dir_path(parent, out) {
            return false;
        }
        if out.len() > start {
            out.push(b'/');
        }
        out.extend_from_slice(name);
        true
    }

    /// Adds `entry` as `name` in `parent`, and returns what it displaced
    /// (with its subtree, for a directory). A directory already in the tree
    /// elsewhere is moved here with its subtree.
    pub fn insert(
        &mut self,
        parent: &ObjectId,
        name: &[u8],
        entry: Entry,
    ) -> Result<Option<Entry>, TreeError> {
        let pd = self.dir(parent).ok_or(TreeError::NoParent)?;
        let moved = if entry.kind.is_dir() {
            if self.is_ancestor(&entry.id, parent) {
                return Err(TreeError::IntoItself);
            }
            self.dir(&entry.id)
        } else {
            None
        };
        check_name(name)?;
        let displaced = match moved {
            Some(x) => {
                let r = Ref::dir(x);
                let n = *self.store.node(r);
                if n.parent == pd && self.store.name(&n) == name {
                    return Ok(None);
                }
                self.relink(r, pd, name)?
            }
            None => {
                let class = self.store.intern(&entry.id)?;
                let bytes = name.len() + entry.id.parts().1.len();
                self.store.reserve(Some(entry.kind.is_dir()), bytes)?;
                let displaced = self.remove_at(pd, name);
                self.add(pd, name, &entry, class);
                displaced
            }
        };
        self.tidy();
        Ok(displaced)
    }

    /// Removes entry `name` of `parent` (a directory with its subtree) and
    /// returns it.
    pub fn remove(&mut self, parent: &ObjectId, name: &[u8]) -> Option<Entry> {
        let e = self.remove_at(self.dir(parent)?, name);
        self.tidy();
        e
    }

    /// Moves entry `sname` of `sparent` to `name` in `parent`, replacing
    /// what was there, which it returns.
    pub fn rename(
        &mut self,
        sparent: &ObjectId,
        sname: &[u8],
        parent: &ObjectId,
        name: &[u8],
    ) -> Result<Option<Entry>, TreeError> {
        let r = self.find(sparent, sname).ok_or(TreeError::NoSource)?;
        let pd = self.dir(parent).ok_or(TreeError::NoParent)?;
        if r.is_dir() && self.above(r.index(), pd) {
            return Err(TreeError::IntoItself);
        }
        if sparent == parent && sname == name {
            return Ok(None);
        }
        check_name(name)?;
        let displaced = self.relink(r, pd, name)?;
        self.tidy();
        Ok(displaced)
    }

    /// Moves node `r` to `name` in directory `pd`, replacing what was
    /// there, which it returns; room for the new name is made first, so a
    /// refusal leaves the tree as it was.
    fn relink(&mut self, r: Ref, pd: u32, name: &[u8]) -> Result<Option<Entry>, TreeError> {
        let n = *self.store.node(r);
        self.store
            .reserve(None, name.len() + self.store.handle(&n).len())?;
        self.unlink(r);
        let displaced = self.remove_at(pd, name);
        self.store.rename(r, name);
        self.link(r, pd);
        Ok(displaced)
    }

    /// Swaps entries `a` and `b` (`RENAME_EXCHANGE`).
    pub fn exchange(
        &mut self,
        a: (&ObjectId, &[u8]),
        b: (&ObjectId, &[u8]),
    ) -> Result<(), TreeError> {
        let ra = self.find(a.0, a.1).ok_or(TreeError::NoSource)?;
        let rb = self.find(b.0, b.1).ok_or(TreeError::NoSource)?;
        if a == b {
            return Ok(());
        }
        let (na, nb) = (*self.store.node(ra), *self.store.node(rb));
        if (ra.is_dir() && self.above(ra.index(), nb.parent))
            || (rb.is_dir() && self.above(rb.index(), na.parent))
        {
            return Err(TreeError::IntoItself);
        }
        let bytes =
            a.1.len() + b.1.len() + self.store.handle(&na).len() + self.store.handle(&nb).len();
        self.store.reserve(None, bytes)?;
        self.unlink(ra);
        self.unlink(rb);
        self.store.rename(ra, b.1);
        self.store.rename(rb, a.1);
        self.link(ra, nb.parent);
        self.link(rb, na.parent);
        self.tidy();
        Ok(())
    }

    /// Every entry by its path: the form tests and comparisons read.
    pub fn listing(&self) -> BTreeMap<Vec<u8>, Entry> {
        let mut out = BTreeMap::new();
        let mut stack = vec![(ROOT, Vec::new())];
        while let Some((d, path)) = stack.pop() {
            for r in self.children(self.store.dir(d).child) {
                let mut p = path.clone();
                if !p.is_empty() {
                    p.push(b'/');
                }
                p.extend_from_slice(self.store.name(self.store.node(r)));
                if r.is_dir() {
                    stack.push((r.index(), p.clone()));
                }
                out.insert(p, self.store.entry(r));
            }
        }
        out
    }

    /// The entries of the directories in `dirs` that the tree holds, as
    /// [`Tree::links_top_down`] gives them (shallower directories first,
    /// names in order): a comparison's input when only they may differ.
    pub(crate) fn links_in(
        &self,
        dirs: &Set<ObjectId>,
    ) -> Vec<(ObjectId, Box<[u8]>, Entry, usize)> {
        let mut found: Vec<(usize, u32)> = dirs
            .iter()
            .filter_map(|id| self.dir(id))
            .map(|d| {
                let mut depth = 0;
                let mut up = self.store.dir(d).node.parent;
                while up != NIL {
                    depth += 1;
                    up = self.store.dir(up).node.parent;
                }
                (depth, d)
            })
            .collect();
        found.sort_unstable();
        // Made to size: grown by doubling, a scope of big directories
        // would copy it several times into fresh pages.
        let total = found
            .iter()
            .map(|&(_, d)| self.store.dir(d).len() as usize)
            .sum();
        let mut out = Vec::with_capacity(total);
        let mut names = Vec::new();
        for (depth, d) in found {
            let dir = self.store.dir(d);
            let id = self.store.id(&dir.node);
            names.clear();
            names.extend(self.children(dir.child));
            let name = |r: &Ref| self.store.name(self.store.node(*r));
            names.sort_by(|a, b| name(a).cmp(name(b)));
            for r in &names {
                out.push((
                    id.clone(),
                    Box::from(name(r)),
                    self.store.entry(*r),
                    depth + 1,
                ));
            }
        }
        out
    }

    /// Every directory's entries, parents before children: (parent, name,
    /// entry), the order a comparison creates them in.
    pub(crate) fn links_top_down(&self) -> Vec<(ObjectId, Box<[u8]>, Entry, usize)> {
        let mut out = Vec::with_capacity(self.entries);
        let mut queue = std::collections::VecDeque::from([(ROOT, 0usize)]);
        let mut names = Vec::new();
        while let Some((d, depth)) = queue.pop_front() {
            let dir = self.store.dir(d);
            let id = self.store.id(&dir.node);
            names.clear();
            names.extend(self.children(dir.child));
            let name = |r: &Ref| self.store.name(self.store.node(*r));
            names.sort_by(|a, b| name(a).cmp(name(b)));
            for r in &names {
                if r.is_dir() {
                    queue.push_back((r.index(), depth + 1));
                }
                out.push((
                    id.clone(),
                    Box::from(name(r)),
                    self.store.entry(*r),
                    depth + 1,
                ));
            }
        }
        out
    }

    /// The directory with id `id`.
    fn dir(&self, id: &ObjectId) -> Option<u32> {
        self.index.dir(&self.store, id)
    }

    /// The node of entry `name` in directory `parent`.
    fn find(&self, parent: &ObjectId, name: &[u8]) -> Option<Ref> {
        self.index.name(&self.store, self.dir(parent)?, name)
    }

    /// The list that starts at `first`.
    fn children(&self, first: Ref) -> impl Iterator<Item = Ref> + '_ {
        self.store.children(first)
    }

    /// Whether directory `a` is directory `d` or one of its ancestors.
    fn above(&self, a: u32, mut d: u32) -> bool {
        while d != NIL {
            if d == a {
                return true;
            }
            d = self.store.dir(d).node.parent;
        }
        false
    }

    /// A new node for `entry`, as `name` in `parent` (which has no such
    /// name); the store has room.
    fn add(&mut self, parent: u32, name: &[u8], entry: &Entry, class: u16) {
        let dir = entry.kind.is_dir();
        let handle = entry.id.parts().1;
        let r = self.store.alloc(dir, NIL, class, entry.kind, handle, name);
        self.link(r, parent);
        if dir {
            self.index.add_dir(&self.store, r.index());
        } else {
            self.index.add_file(&self.store, r.index());
        }
        self.entries += 1;
    }

    /// Puts node `r` first in directory `d`'s list and in the name index.
    fn link(&mut self, r: Ref, d: u32) {
        if let Some(t) = self.touched.as_mut() {
            t.mark(d);
            self.times.take(d);
            if r.is_dir() {
                t.mark(r.index());
            }
        }
        let first = self.store.dir(d).child;
        let n = self.store.node_mut(r);
        n.parent = d;
        n.prev = Ref::NONE;
        n.next = first;
        if first != Ref::NONE {
            self.store.node_mut(first).prev = r;
        }
        let dir = self.store.dir_mut(d);
        dir.child = r;
        dir.grew();
        self.index.add_name(&mut self.store, r);
    }

    /// Takes node `r` out of its directory's list and the name index,
    /// keeping it (and a directory's subtree) for a move.
    fn unlink(&mut self, r: Ref) {
        self.index.remove_name(&self.store, r);
        let n = *self.store.node(r);
        if let Some(t) = self.touched.as_mut() {
            t.mark(n.parent);
            self.times.take(n.parent);
        }
        if n.prev == Ref::NONE {
            self.store.dir_mut(n.parent).child = n.next;
        } else {
            self.store.node_mut(n.prev).next = n.next;
        }
        if n.next != Ref::NONE {
            self.store.node_mut(n.next).prev = n.prev;
        }
        self.store.dir_mut(n.parent).shrank();
    }

    /// Removes entry `name` of directory `d`, a directory with everything
    /// below it.
    fn remove_at(&mut self, d: u32, name: &[u8]) -> Option<Entry> {
        let r = self.index.name(&self.store, d, name)?;
        let e = self.store.entry(r);
        self.unlink(r);
        let mut stack = vec![r];
        while let Some(r) = stack.pop() {
            if r.is_dir() {
                let mut c = self.store.dir(r.index()).child;
                while c != Ref::NONE {
                    self.index.remove_name(&self.store, c);
                    stack.push(c);
                    c = self.store.node(c).next;
                }
                self.index.remove_dir(&self.store, r.index());
                self.times.take(r.index());
                if let Some(t) = self.touched.as_mut() {
                    t.free(r.index());
                    t.removed
                        .push(self.store.id(&self.store.dir(r.index()).node));
                }
            } else {
                self.index.remove_file(&self.store, r.index());
            }
            self.store.free(r);
            self.entries -= 1;
        }
        Some(e)
    }

    /// After a change: compacts the arena when half of it is garbage, and
    /// rebuilds the tree (slabs and tables sized to fit) when three
    /// quarters of its slots are free. Both cost a pass over what is left,
    /// after at least as many changes, so churn pays a constant for each.
    fn tidy(&mut self) {
        let (live, slots) = self.store.occupancy();
        if slots >= self.limits.slots && live * 4 < slots {
            if let Some(mut t) = self.rebuilt() {
                // Slots are new: carry the times and touches over by id.
                for (d, times) in self.times.known() {
                    let id = self.store.id(&self.store.dir(d).node);
                    t.set_dir_times(&id, times);
                }
                if let Some(old) = self.touched.take() {
                    let mut new = Touched::default();
                    for d in old.slots() {
                        let id = self.store.id(&self.store.dir(d).node);
                        if let Some(nd) = t.dir(&id) {
                            new.mark(nd);
                        }
                    }
                    for d in old.untimed() {
                        let id = self.store.id(&self.store.dir(d).node);
                        if let Some(nd) = t.dir(&id) {
                            new.mark_untimed(nd);
                        }
                    }
                    new.removed = old.removed;
                    t.touched = Some(new);
                }
                *self = t;
            }
        } else if self.store.wants_compaction(self.limits.garbage) {
            self.store.compact();
        }
    }

    /// A copy of the tree in fresh storage; `None` only if it cannot hold
    /// what this one does, which it always can.
    fn rebuilt(&self) -> Option<Tree> {
        let mut t = Tree::with_limits(self.root.clone(), self.limits);
        let mut stack = vec![(ROOT, ROOT)];
        while let Some((old, new)) = stack.pop() {
            for r in self.children(self.store.dir(old).child) {
                let e = self.store.entry(r);
                let name = self.store.name(self.store.node(r));
                let class = t.store.intern(&e.id).ok()?;
                t.store
                    .reserve(Some(r.is_dir()), name.len() + e.id.parts().1.len())
                    .ok()?;
                t.add(new, name, &e, class);
                if r.is_dir() {
                    // The node just added is first in its directory.
                    stack.push((r.index(), t.store.dir(new).child.index()));
                }
            }
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests;
