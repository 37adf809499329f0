//! The tree as it was before its compact layout: maps of ids and names,
//! kept as the model the compact tree is checked against.

use std::collections::BTreeMap;

use crate::id::ObjectId;
use crate::tree::{Entry, Map, TreeError};

#[derive(Clone, Debug)]
struct Dir {
    /// `None` for the root.
    parent: Option<ObjectId>,
    name: Box<[u8]>,
    entries: Map<Box<[u8]>, Entry>,
}

/// A watched tree: the root directory and everything below it.
#[derive(Clone, Debug)]
pub(super) struct Reference {
    root: ObjectId,
    dirs: Map<ObjectId, Dir>,
    /// Names of each non-directory in the tree.
    links: Map<ObjectId, u32>,
    entries: usize,
}

impl Reference {
    /// An empty tree whose root directory is `root`.
    pub(super) fn new(root: ObjectId) -> Reference {
        let mut dirs = Map::default();
        dirs.insert(
            root.clone(),
            Dir {
                parent: None,
                name: Box::default(),
                entries: Map::default(),
            },
        );
        Reference {
            root,
            dirs,
            links: Map::default(),
            entries: 0,
        }
    }

    /// The root directory's id.
    pub(super) fn root(&self) -> &ObjectId {
        &self.root
    }

    /// Whether `id` is a directory of the tree (the root included).
    pub(super) fn has_dir(&self, id: &ObjectId) -> bool {
        self.dirs.contains_key(id)
    }

    /// The entry `name` in directory `parent`.
    pub(super) fn lookup(&self, parent: &ObjectId, name: &[u8]) -> Option<&Entry> {
        self.dirs.get(parent)?.entries.get(name)
    }

    /// How many names the non-directory `id` has in the tree.
    pub(super) fn links(&self, id: &ObjectId) -> u32 {
        self.links.get(id).copied().unwrap_or(0)
    }

    /// Whether `id` is in the tree, as a directory or under some name.
    pub(super) fn contains(&self, id: &ObjectId) -> bool {
        self.has_dir(id) || self.links(id) > 0
    }

    /// Every entry below the root, the root itself not counted.
    pub(super) fn len(&self) -> usize {
        self.entries
    }

    /// Whether the root is empty.
    pub(super) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The directories, the root included.
    pub(super) fn dir_count(&self) -> usize {
        self.dirs.len()
    }

    /// A directory's parent and name; `None` for the root or an unknown id.
    pub(super) fn location(&self, dir: &ObjectId) -> Option<(&ObjectId, &[u8])> {
        let d = self.dirs.get(dir)?;
        Some((d.parent.as_ref()?, &d.name))
    }

    /// The entries of directory `dir` (none for an unknown one).
    pub(super) fn entries_of(&self, dir: &ObjectId) -> impl Iterator<Item = (&[u8], &Entry)> {
        self.dirs
            .get(dir)
            .into_iter()
            .flat_map(|d| d.entries.iter().map(|(n, e)| (&**n, e)))
    }

    /// Whether `above` is `dir` or one of its ancestors.
    pub(super) fn is_ancestor(&self, above: &ObjectId, dir: &ObjectId) -> bool {
        let mut at = Some(dir);
        while let Some(d) = at {
            if d == above {
                return true;
            }
            at = self.dirs.get(d).and_then(|n| n.parent.as_ref());
        }
        false
    }

    /// Directory `dir`'s path relative to the root (`""` for the root),
    /// appended to `out`; `false` (and `out` as it was) for an unknown id.
    pub(super) fn dir_path(&self, dir: &ObjectId, out: &mut Vec<u8>) -> bool {
        let start = out.len();
        let mut names: Vec<&[u8]> = Vec::new();
        let mut at = dir;
        loop {
            let Some(d) = self.dirs.get(at) else {
                out.truncate(start);
                return false;
            };
            match &d.parent {
                None => break,
                Some(p) => {
                    names.push(&d.name);
                    at = p;
                }
            }
        }
        for (i, n) in names.iter().rev().enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            out.extend_from_slice(n);
        }
        true
    }

    /// The path of entry `name` in `parent`, appended to `out`.
    pub(super) fn entry_path(&self, parent: &ObjectId, name: &[u8], out: &mut Vec<u8>) -> bool {
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
    pub(super) fn insert(
        &mut self,
        parent: &ObjectId,
        name: &[u8],
        entry: Entry,
    ) -> Result<Option<Entry>, TreeError> {
        if !self.dirs.contains_key(parent) {
            return Err(TreeError::NoParent);
        }
        if entry.kind.is_dir() {
            if self.is_ancestor(&entry.id, parent) {
                return Err(TreeError::IntoItself);
            }
            if let Some((p, n)) = self
                .location(&entry.id)
                .map(|(p, n)| (p.clone(), n.to_vec()))
            {
                self.detach(&p, &n);
            }
        }
        let displaced = self.remove(parent, name);
        self.attach(parent, name, entry);
        Ok(displaced)
    }

    /// Removes entry `name` of `parent` (a directory with its subtree) and
    /// returns it.
    pub(super) fn remove(&mut self, parent: &ObjectId, name: &[u8]) -> Option<Entry> {
        let e = self.detach(parent, name)?;
        if e.kind.is_dir() {
            self.drop_subtree(&e.id);
        }
        Some(e)
    }

    /// Moves entry `sname` of `sparent` to `name` in `parent`, replacing
    /// what was there, which it returns.
    pub(super) fn rename(
        &mut self,
        sparent: &ObjectId,
        sname: &[u8],
        parent: &ObjectId,
        name: &[u8],
    ) -> Result<Option<Entry>, TreeError> {
        let Some(e) = self.lookup(sparent, sname).cloned() else {
            return Err(TreeError::NoSource);
        };
        if !self.dirs.contains_key(parent) {
            return Err(TreeError::NoParent);
        }
        if e.kind.is_dir() && self.is_ancestor(&e.id, parent) {
            return Err(TreeError::IntoItself);
        }
        if sparent == parent && sname == name {
            return Ok(None);
        }
        self.detach(sparent, sname);
        let displaced = self.remove(parent, name);
        self.attach(parent, name, e);
        Ok(displaced)
    }

    /// Swaps entries `a` and `b` (`RENAME_EXCHANGE`).
    pub(super) fn exchange(
        &mut self,
        a: (&ObjectId, &[u8]),
        b: (&ObjectId, &[u8]),
    ) -> Result<(), TreeError> {
        let ea = self.lookup(a.0, a.1).cloned().ok_or(TreeError::NoSource)?;
        let eb = self.lookup(b.0, b.1).cloned().ok_or(TreeError::NoSource)?;
        if a == b {
            return Ok(());
        }
        if (ea.kind.is_dir() && self.is_ancestor(&ea.id, b.0))
            || (eb.kind.is_dir() && self.is_ancestor(&eb.id, a.0))
        {
            return Err(TreeError::IntoItself);
        }
        self.detach(a.0, a.1);
        self.detach(b.0, b.1);
        self.attach(a.0, a.1, eb);
        self.attach(b.0, b.1, ea);
        Ok(())
    }

    /// Every entry by its path: the form tests and comparisons read.
    pub(super) fn listing(&self) -> BTreeMap<Vec<u8>, Entry> {
        let mut out = BTreeMap::new();
        let mut stack = vec![(self.root.clone(), Vec::new())];
        while let Some((dir, path)) = stack.pop() {
            for (name, e) in self.entries_of(&dir) {
                let mut p = path.clone();
                if !p.is_empty() {
                    p.push(b'/');
                }
                p.extend_from_slice(name);
                if e.kind.is_dir() {
                    stack.push((e.id.clone(), p.clone()));
                }
                out.insert(p, e.clone());
            }
        }
        out
    }

    /// Every directory's entries, parents before children: (parent, name,
    /// entry), the order a comparison creates them in.
    pub(super) fn links_top_down(&self) -> Vec<(ObjectId, Box<[u8]>, Entry, usize)> {
        let mut out = Vec::with_capacity(self.entries);
        let mut queue = std::collections::VecDeque::from([(self.root.clone(), 0usize)]);
        while let Some((dir, depth)) = queue.pop_front() {
            let mut names: Vec<_> = self.entries_of(&dir).collect();
            names.sort_by(|a, b| a.0.cmp(b.0));
            for (name, e) in names {
                if e.kind.is_dir() {
                    queue.push_back((e.id.clone(), depth + 1));
                }
                out.push((dir.clone(), Box::from(name), e.clone(), depth + 1));
            }
        }
        out
    }

    /// Links `entry` as `name` in `parent`, which exists and has no such
    /// name.
    fn attach(&mut self, parent: &ObjectId, name: &[u8], entry: Entry) {
        if entry.kind.is_dir() {
            let node = self.dirs.entry(entry.id.clone()).or_insert_with(|| Dir {
                parent: None,
                name: Box::default(),
                entries: Map::default(),
            });
            node.parent = Some(parent.clone());
            node.name = Box::from(name);
        } else {
            *self.links.entry(entry.id.clone()).or_insert(0) += 1;
        }
        if let Some(d) = self.dirs.get_mut(parent) {
            d.entries.insert(Box::from(name), entry);
            self.entries += 1;
        }
    }

    /// Unlinks entry `name` of `parent`, keeping a directory's node and
    /// subtree (for a move).
    fn detach(&mut self, parent: &ObjectId, name: &[u8]) -> Option<Entry> {
        let e = self.dirs.get_mut(parent)?.entries.remove(name)?;
        self.entries -= 1;
        if !e.kind.is_dir()
            && let Some(n) = self.links.get_mut(&e.id)
        {
            *n -= 1;
            if *n == 0 {
                self.links.remove(&e.id);
            }
        }
        Some(e)
    }

    /// Forgets directory `dir`'s node and everything below it.
    fn drop_subtree(&mut self, dir: &ObjectId) {
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            if d == self.root {
                continue;
            }
            let Some(node) = self.dirs.remove(&d) else {
                continue;
            };
            for (_, e) in node.entries {
                self.entries -= 1;
                if e.kind.is_dir() {
                    stack.push(e.id);
                } else if let Some(n) = self.links.get_mut(&e.id) {
                    *n -= 1;
                    if *n == 0 {
                        self.links.remove(&e.id);
                    }
                }
            }
        }
    }
}
