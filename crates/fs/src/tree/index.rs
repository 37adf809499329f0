//! The tree's hash indexes over the store's nodes: an entry by its
//! directory and name, a directory by its id, a non-directory by its id.
//!
//! Each table holds only a `u32` per node (hashbrown's `HashTable`, a
//! control byte beside it); keys are read from the store, so they are
//! never held twice. The name table holds only the children of
//! directories that have had more than [`LIST_MAX`] of them: a smaller
//! directory is searched through its list of children. Most directories
//! are small, so the table is spared most of a tree's entries: on a tree
//! of ten files per directory, 9 of the 52 bytes an entry costs
//! (`examples/tree_size.rs`). A name found that way costs no more than
//! through the table (less, a directory at a time, since the list is in
//! the cache after the first); an absent one costs a read of the whole
//! list, about 0.3 µs more than the table's probe in a directory not in
//! the cache. A non-directory with several names (hard links) is
//! in the id table once, by one of its nodes; its other nodes are listed
//! beside it, in a map that only hard-linked files are in.

use std::hash::{BuildHasher, Hasher};

use hashbrown::HashTable;

use super::store::{Node, Ref, Store};
use crate::id::ObjectId;

type Hashing = foldhash::fast::RandomState;

/// The children a directory has at most before its children go in the
/// name table: a lookup in a smaller one reads at most this many nodes,
/// which a directory's children, made together, mostly keep near each
/// other in the slab. Once in the table, a directory's children stay
/// there, whatever it shrinks to.
pub(super) const LIST_MAX: u32 = 32;

#[derive(Clone, Debug)]
pub(super) struct Index {
    hashing: Hashing,
    /// [`LIST_MAX`], but for tests.
    list_max: u32,
    /// The children of hashed directories (see [`LIST_MAX`]), by
    /// (directory, name).
    names: HashTable<Ref>,
    /// Every directory, by id.
    dirs: HashTable<u32>,
    /// A node of every non-directory, by id.
    files: HashTable<u32>,
    /// A non-directory's other nodes, by the one in `files`.
    more: hashbrown::HashMap<u32, Vec<u32>, Hashing>,
}

fn name_hash(h: &Hashing, parent: u32, name: &[u8]) -> u64 {
    let mut s = h.build_hasher();
    s.write_u32(parent);
    s.write(name);
    s.finish()
}

fn id_hash(h: &Hashing, class: u16, handle: &[u8]) -> u64 {
    let mut s = h.build_hasher();
    s.write_u16(class);
    s.write(handle);
    s.finish()
}

fn node_name_hash(h: &Hashing, s: &Store, r: Ref) -> u64 {
    let n = s.node(r);
    name_hash(h, n.parent, s.name(n))
}

fn node_id_hash(h: &Hashing, s: &Store, n: &Node) -> u64 {
    id_hash(h, n.class, s.handle(n))
}

/// Whether node `n` has the id of class `class` and handle `handle`.
fn has_id(s: &Store, n: &Node, class: u16, handle: &[u8]) -> bool {
    n.class == class && s.handle(n) == handle
}

impl Index {
    pub(super) fn new(list_max: u32) -> Index {
        Index {
            hashing: Hashing::default(),
            list_max,
            names: HashTable::new(),
            dirs: HashTable::new(),
            files: HashTable::new(),
            more: hashbrown::HashMap::default(),
        }
    }

    /// The entry `name` of directory `parent`.
    pub(super) fn name(&self, s: &Store, parent: u32, name: &[u8]) -> Option<Ref> {
        let dir = s.dir(parent);
        if !dir.hashed() {
            return s.children(dir.child).find(|&r| s.name(s.node(r)) == name);
        }
        let h = name_hash(&self.hashing, parent, name);
        self.names
            .find(h, |&r| {
                let n = s.node(r);
                n.parent == parent && s.name(n) == name
            })
            .copied()
    }

    /// Node `r`, just linked into its directory (and counted there): in
    /// the name table if the directory's children are, or all of them
    /// once it has too many to search.
    pub(super) fn add_name(&mut self, s: &mut Store, r: Ref) {
        let d = s.node(r).parent;
        let dir = s.dir_mut(d);
        let first = dir.child;
        if !dir.hashed() {
            if dir.len() <= self.list_max {
                return;
            }
            dir.set_hashed();
            let s = &*s;
            for c in s.children(first).filter(|&c| c != r) {
                self.insert_name(s, c);
            }
        }
        self.insert_name(s, r);
    }

    fn insert_name(&mut self, s: &Store, r: Ref) {
        let h = &self.hashing;
        self.names
            .insert_unique(node_name_hash(h, s, r), r, |&x| node_name_hash(h, s, x));
    }

    /// Takes node `r` out of the name table (before its name or directory
    /// changes), if its directory's children are there.
    pub(super) fn remove_name(&mut self, s: &Store, r: Ref) {
        if !s.dir(s.node(r).parent).hashed() {
            return;
        }
        let h = node_name_hash(&self.hashing, s, r);
        if let Ok(e) = self.names.find_entry(h, |&x| x == r) {
            e.remove();
        }
    }

    /// The directory with id `id`.
    pub(super) fn dir(&self, s: &Store, id: &ObjectId) -> Option<u32> {
        let (class, handle) = s.class_of(id)?;
        let h = id_hash(&self.hashing, class, handle);
        self.dirs
            .find(h, |&d| has_id(s, &s.dir(d).node, class, handle))
            .copied()
    }

    pub(super) fn add_dir(&mut self, s: &Store, d: u32) {
        let h = &self.hashing;
        let hash = node_id_hash(h, s, &s.dir(d).node);
        self.dirs
            .insert_unique(hash, d, |&x| node_id_hash(h, s, &s.dir(x).node));
    }

    pub(super) fn remove_dir(&mut self, s: &Store, d: u32) {
        let h = node_id_hash(&self.hashing, s, &s.dir(d).node);
        if let Ok(e) = self.dirs.find_entry(h, |&x| x == d) {
            e.remove();
        }
    }

    /// How many names the non-directory `id` has.
    pub(super) fn links(&self, s: &Store, id: &ObjectId) -> u32 {
        let Some((class, handle)) = s.class_of(id) else {
            return 0;
        };
        let h = id_hash(&self.hashing, class, handle);
        match self
            .files
            .find(h, |&f| has_id(s, s.node(Ref::file(f)), class, handle))
        {
            None => 0,
            Some(f) => 1 + self.more.get(f).map_or(0, |m| m.len() as u32),
        }
    }

    /// Adds non-directory node `f`: to the id table, or beside the node of
    /// its id already there.
    pub(super) fn add_file(&mut self, s: &Store, f: u32) {
        let n = s.node(Ref::file(f));
        let (class, handle) = (n.class, s.handle(n));
        let h = &self.hashing;
        let hash = id_hash(h, class, handle);
        match self
            .files
            .find(hash, |&x| has_id(s, s.node(Ref::file(x)), class, handle))
        {
            Some(&first) => self.more.entry(first).or_default().push(f),
            None => {
                self.files
                    .insert_unique(hash, f, |&x| node_id_hash(h, s, s.node(Ref::file(x))));
            }
        }
    }

    /// Takes non-directory node `f` out; if it stood for its id, one of
    /// the id's other nodes stands for it now.
    pub(super) fn remove_file(&mut self, s: &Store, f: u32) {
        let n = s.node(Ref::file(f));
        let (class, handle) = (n.class, s.handle(n));
        let hash = id_hash(&self.hashing, class, handle);
        match self.files.find_entry(hash, |&x| x == f) {
            Ok(mut e) => match self.more.remove(&f) {
                Some(mut others) => {
                    // `more` holds no empty list.
                    let Some(next) = others.pop() else { return };
                    *e.get_mut() = next;
                    if !others.is_empty() {
                        self.more.insert(next, others);
                    }
                }
                None => {
                    e.remove();
                }
            },
            Err(_) => {
                let Some(&first) = self
                    .files
                    .find(hash, |&x| has_id(s, s.node(Ref::file(x)), class, handle))
                else {
                    return;
                };
                if let Some(others) = self.more.get_mut(&first) {
                    others.retain(|&x| x != f);
                    if others.is_empty() {
                        self.more.remove(&first);
                    }
                }
            }
        }
    }

    /// Room in the id tables for `dirs` more directories and `files` more
    /// other nodes: a rehash reads every key back from the store, which a
    /// tree loaded whole would otherwise do at each growth. (How many
    /// names the name table will hold depends on the directories' sizes.)
    pub(super) fn reserve(&mut self, s: &Store, dirs: usize, files: usize) {
        let h = &self.hashing;
        self.dirs
            .reserve(dirs, |&x| node_id_hash(h, s, &s.dir(x).node));
        self.files
            .reserve(files, |&x| node_id_hash(h, s, s.node(Ref::file(x))));
    }

    /// The bytes the tables hold on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        self.names.allocation_size()
            + self.dirs.allocation_size()
            + self.files.allocation_size()
            + self.more.allocation_size()
            + self
                .more
                .values()
                .map(|v| v.capacity() * size_of::<u32>())
                .sum::<usize>()
    }
}
