//! `since` against replays: random changes to a model tree are logged as
//! the tracker logs them (a `fs root watched` MARK of an empty root, then
//! a record per change) into a real log, and for every `since` the answer
//! must be the difference between the replayed trees at `since` and at
//! the end. [`fresh`]: one test per reason an answer is `fresh`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use proptest::prelude::*;
use weir_log::{Field, Log, Options, Record, RecordType};
use weir_sys::fanotify::fid::FileHandle;

use super::*;
use crate::change::{Change, How};
use crate::kind::Kind;
use crate::record::{Paths, with_record};
use crate::replay::view_until;
use crate::tree::{Entry, Tree};

const ROOT: &str = "/w";

fn oid_on(fs: u32, n: u32) -> ObjectId {
    let h = FileHandle::new(1, &n.to_be_bytes()).expect("a small handle");
    ObjectId::from_handle([fs, 4], &h)
}

fn oid(n: u32) -> ObjectId {
    oid_on(3, n)
}

fn open() -> (tempfile::TempDir, Log) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = Log::open(dir.path().join("log"), Options::default()).expect("log");
    (dir, log)
}

fn mark(log: &Log, name: &[u8], root: &str, id: &ObjectId, extra: &[(&str, &[u8])]) -> u64 {
    let mut fields = vec![
        Field {
            key: "source",
            value: b"fs",
        },
        Field {
            key: "root",
            value: root.as_bytes(),
        },
    ];
    fields.extend(extra.iter().map(|(k, v)| Field { key: k, value: v }));
    let r = Record::new(RecordType::MARK)
        .name(name)
        .target(id.as_bytes())
        .fields(&fields);
    log.append(&r).expect("append").index()
}

fn watched(log: &Log, root: &str, id: &ObjectId) -> u64 {
    mark(log, WATCHED, root, id, &[("entries", b"0")])
}

/// The model: a tree, its next id, and the log it writes to.
struct Model<'a> {
    tree: Tree,
    next: u32,
    log: &'a Log,
}

impl Model<'_> {
    fn path(&self, parent: &ObjectId, name: &[u8]) -> Vec<u8> {
        let mut p = Vec::new();
        self.tree.entry_path(parent, name, &mut p);
        p
    }

    /// Applies `c` and logs it with its paths, as the tracker does.
    fn log(&mut self, c: Change) -> u64 {
        let (before, after) = match &c {
            Change::Rename {
                sparent,
                sname,
                parent,
                name,
                ..
            }
            | Change::MoveOut {
                sparent,
                sname,
                parent,
                name,
                ..
            } => (
                self.path(sparent, sname),
                Some((parent.clone(), name.clone())),
            ),
            Change::Create { parent, name, .. }
            | Change::MoveIn { parent, name, .. }
            | Change::Remove { parent, name, .. }
            | Change::Attr { parent, name, .. }
            | Change::Modify { parent, name, .. } => (self.path(parent, name), None),
        };
        c.apply(&mut self.tree)
            .expect("a change the model made applies");
        let paths = match (&c, after) {
            (Change::MoveOut { .. }, _) => Paths {
                path: Vec::new(),
                spath: before,
            },
            (_, Some((p, n))) => Paths {
                path: self.path(&p, &n),
                spath: before,
            },
            (Change::Remove { .. }, None) => Paths {
                path: before,
                spath: Vec::new(),
            },
            (Change::Create { parent, name, .. } | Change::MoveIn { parent, name, .. }, None) => {
                Paths {
                    path: self.path(parent, name),
                    spath: Vec::new(),
                }
            }
            (_, None) => Paths {
                path: before,
                spath: Vec::new(),
            },
        };
        with_record(&c, How::Event, &paths, |r| self.log.append(r))
            .expect("append")
            .index()
    }

    fn fresh_id(&mut self) -> ObjectId {
        self.next += 1;
        oid(self.next)
    }

    /// Every entry of the tree: (parent, name, entry).
    fn entries(&self) -> Vec<(ObjectId, Vec<u8>, Entry)> {
        let mut out = Vec::new();
        let mut dirs = vec![self.tree.root().clone()];
        while let Some(d) = dirs.pop() {
            for (n, e) in self.tree.entries_of(&d) {
                if e.kind.is_dir() {
                    dirs.push(e.id.clone());
                }
                out.push((d.clone(), n.to_vec(), e));
            }
        }
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    }

    fn dirs(&self) -> Vec<ObjectId> {
        let mut d = vec![self.tree.root().clone()];
        d.extend(
            self.entries()
                .into_iter()
                .filter(|e| e.2.kind.is_dir())
                .map(|e| e.2.id),
        );
        d
    }

    /// A change the live kernel could make, chosen by `op` and the seeds;
    /// `None` when it does not apply to the tree as it is.
    fn pick(&mut self, op: u8, a: u16, b: u16, n: u8) -> Option<Change> {
        let entries = self.entries();
        let dirs = self.dirs();
        let name = vec![b'a' + n % 4];
        let dir = dirs[usize::from(b) % dirs.len()].clone();
        let some =
            |x: u16| (!entries.is_empty()).then(|| entries[usize::from(x) % entries.len()].clone());
        let free = self.tree.lookup(&dir, &name).is_none();
        Some(match op % 10 {
            0 | 1 => {
                let kind = [Kind::File, Kind::Dir, Kind::Symlink][usize::from(a) % 3];
                if !free {
                    return None;
                }
                Change::Create {
                    parent: dir,
                    name,
                    entry: Entry {
                        id: self.fresh_id(),
                        kind,
                    },
                    link: false,
                }
            }
            2 => {
                let (_, _, e) = some(a).filter(|x| !x.2.kind.is_dir())?;
                if !free {
                    return None;
                }
                Change::Create {
                    parent: dir,
                    name,
                    entry: e,
                    link: true,
                }
            }
            3 => {
                let (p, name, entry) = some(a)?;
                if entry.kind.is_dir() && self.tree.entries_of(&entry.id).next().is_some() {
                    return None;
                }
                let last = entry.kind.is_dir() || self.tree.links(&entry.id) == 1;
                Change::Remove {
                    parent: p,
                    name,
                    entry,
                    last,
                }
            }
            4..=6 => {
                let (sp, sname, entry) = some(a)?;
                if entry.kind.is_dir() && self.tree.is_ancestor(&entry.id, &dir) {
                    return None;
                }
                let there = self.tree.lookup(&dir, &name);
                let overwritten = match there {
                    None => None,
                    Some(t) if t.id == entry.id => return None,
                    Some(t) if t.kind.is_dir() != entry.kind.is_dir() => return None,
                    Some(t) if t.kind.is_dir() && self.tree.entries_of(&t.id).next().is_some() => {
                        return None;
                    }
                    Some(t) => {
                        let last = t.kind.is_dir() || self.tree.links(&t.id) == 1;
                        Some((t, last))
                    }
                };
                if sp == dir && sname == name {
                    return None;
                }
                Change::Rename {
                    sparent: sp,
                    sname,
                    parent: dir,
                    name,
                    entry,
                    overwritten,
                    exchanged: None,
                }
            }
            7 => {
                let (sp, sname, x) = some(a)?;
                let (p, name, y) = some(b)?;
                let ancestry =
                    |t: &Tree, e: &Entry, d: &ObjectId| e.kind.is_dir() && t.is_ancestor(&e.id, d);
                if x.id == y.id
                    || ancestry(&self.tree, &x, &p)
                    || ancestry(&self.tree, &y, &sp)
                    || (sp == p && sname == name)
                {
                    return None;
                }
                Change::Rename {
                    sparent: sp,
                    sname,
                    parent: p,
                    name,
                    entry: x,
                    overwritten: None,
                    exchanged: Some(y),
                }
            }
            8 => {
                let (p, name, e) = some(a)?;
                if b.is_multiple_of(2) {
                    Change::Modify {
                        parent: p,
                        name,
                        id: e.id,
                    }
                } else {
                    Change::Attr {
                        parent: p,
                        name,
                        id: e.id,
                    }
                }
            }
            _ => {
                // Out of the tree, when nothing below has a name outside
                // what leaves.
                let (sp, sname, entry) = some(a)?;
                let at = self.path(&sp, &sname);
                let listing = self.tree.listing();
                let inside = |p: &[u8], at: &[u8]| {
                    p == at || (p.starts_with(at) && p.get(at.len()) == Some(&b'/'))
                };
                let mut counts: BTreeMap<ObjectId, u32> = BTreeMap::new();
                for (p, e) in &listing {
                    if inside(p, &at) && !e.kind.is_dir() {
                        *counts.entry(e.id.clone()).or_default() += 1;
                    }
                }
                if counts.iter().any(|(id, c)| self.tree.links(id) != *c) {
                    return None;
                }
                Change::MoveOut {
                    sparent: sp,
                    sname,
                    parent: oid(0xffff),
                    name: b"away".to_vec(),
                    entry,
                }
            }
        })
    }
}

/// The answer the trees at `since` and at the end give, for the names
/// `touched` (by directory and name) in between, and objects `written`.
fn expected(
    then: &Tree,
    now: &Tree,
    touched: &HashSet<(ObjectId, Vec<u8>)>,
    written: &crate::tree::Set<ObjectId>,
) -> Changes {
    let path = |t: &Tree, p: &ObjectId, n: &[u8]| {
        let mut out = Vec::new();
        t.entry_path(p, n, &mut out);
        out
    };
    let mut lost = Vec::new();
    let mut gained = Vec::new();
    let mut kept = Vec::new();
    for (p, n) in touched {
        let a = then.lookup(p, n).map(|e| e.id);
        let b = now.lookup(p, n).map(|e| e.id);
        match (a, b) {
            (Some(a), Some(b)) if a == b => kept.push((a, path(now, p, n))),
            (a, b) => {
                if let Some(a) = a {
                    lost.push((a, path(then, p, n)));
                }
                if let Some(b) = b {
                    gained.push((b, path(now, p, n)));
                }
            }
        }
    }
    let mut out = Changes::default();
    pair(lost, gained, written, &mut out);
    out.modified.extend(
        kept.into_iter()
            .filter(|(id, _)| written.contains(id))
            .map(|(_, p)| p),
    );
    out.removed = topmost(std::mem::take(&mut out.removed));
    out.created.sort();
    out.modified.sort();
    out.modified.dedup();
    out.renamed.sort();
    out
}

/// The names a change touches, and the object it writes.
fn touches(
    c: &Change,
    names: &mut HashSet<(ObjectId, Vec<u8>)>,
    written: &mut crate::tree::Set<ObjectId>,
) {
    match c {
        Change::Rename {
            sparent,
            sname,
            parent,
            name,
            ..
        } => {
            names.insert((sparent.clone(), sname.clone()));
            names.insert((parent.clone(), name.clone()));
        }
        Change::MoveOut { sparent, sname, .. } => {
            names.insert((sparent.clone(), sname.clone()));
        }
        Change::Attr { parent, name, id } | Change::Modify { parent, name, id } => {
            names.insert((parent.clone(), name.clone()));
            written.insert(id.clone());
        }
        Change::Create { parent, name, .. }
        | Change::MoveIn { parent, name, .. }
        | Change::Remove { parent, name, .. } => {
            names.insert((parent.clone(), name.clone()));
        }
    }
}

fn ops() -> impl Strategy<Value = Vec<(u8, u16, u16, u8)>> {
    proptest::collection::vec(
        (any::<u8>(), any::<u16>(), any::<u16>(), any::<u8>()),
        1..48,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn since_is_the_difference_of_the_replayed_trees(ops in ops()) {
        let (_dir, log) = open();
        let root = oid(1);
        let start = watched(&log, ROOT, &root);
        let mut m = Model { tree: Tree::new(root.clone()), next: 1, log: &log };
        let mut logged: Vec<(u64, Change)> = Vec::new();
        for (op, a, b, n) in ops {
            if let Some(c) = m.pick(op, a, b, n) {
                let i = m.log(c.clone());
                logged.push((i, c));
            }
        }
        log.sync().expect("sync");
        let end = log.last_index();
        let now = view_until(&log, Path::new(ROOT), None, end).unwrap().expect("a view").tree;
        prop_assert_eq!(now.listing(), m.tree.listing());
        for since in start..=end {
            let then = view_until(&log, Path::new(ROOT), None, since).unwrap().expect("a view").tree;
            let mut names = HashSet::new();
            let mut written = crate::tree::Set::default();
            for (_, c) in logged.iter().filter(|(i, _)| *i > since) {
                touches(c, &mut names, &mut written);
            }
            let got = changes(&log, Path::new(ROOT), since).expect("an answer");
            prop_assert!(!got.fresh, "fresh at {}: {:?}", since, got.why);
            prop_assert_eq!(got.next, end);
            let want = expected(&then, &now, &names, &written);
            prop_assert_eq!(&got.created, &want.created, "created since {}", since);
            prop_assert_eq!(&got.removed, &want.removed, "removed since {}", since);
            prop_assert_eq!(&got.renamed, &want.renamed, "renamed since {}", since);
            prop_assert_eq!(&got.modified, &want.modified, "modified since {}", since);
            // Every name listed is in the tree it is said to be in.
            let (l_then, l_now) = (then.listing(), now.listing());
            for p in got.created.iter().chain(got.modified.iter()) {
                prop_assert!(l_now.contains_key(p));
            }
            for p in &got.removed {
                let (a, b) = (l_then.get(p).map(|e| &e.id), l_now.get(p).map(|e| &e.id));
                prop_assert!(a.is_some() && a != b);
            }
            for r in &got.renamed {
                prop_assert!(l_then.contains_key(&r.from) && l_now.contains_key(&r.to));
            }
        }
    }
}

mod fresh;

#[test]
fn pairing_renames_each_objects_names_in_path_order() {
    let p = |s: &str| s.as_bytes().to_vec();
    // 1 lost two names and gained two: two renames, by path order. 2
    // lost one and gained two: a rename and a creation. 3 lost one:
    // removed. 4 gained one: created. 5 was renamed and written.
    let lost = vec![
        (oid(1), p("b1")),
        (oid(3), p("gone")),
        (oid(1), p("a1")),
        (oid(2), p("x2")),
        (oid(5), p("w")),
    ];
    let gained = vec![
        (oid(2), p("y2")),
        (oid(1), p("d1")),
        (oid(4), p("new")),
        (oid(2), p("z2")),
        (oid(1), p("c1")),
        (oid(5), p("w2")),
    ];
    let written: crate::tree::Set<ObjectId> = [oid(5)].into_iter().collect();
    let mut out = Changes::default();
    pair(lost, gained, &written, &mut out);
    out.renamed.sort();
    out.created.sort();
    let renamed: Vec<(&[u8], &[u8])> = out
        .renamed
        .iter()
        .map(|r| (&r.from[..], &r.to[..]))
        .collect();
    assert_eq!(
        renamed,
        [
            (&b"a1"[..], &b"c1"[..]),
            (b"b1", b"d1"),
            (b"w", b"w2"),
            (b"x2", b"y2"),
        ]
    );
    assert_eq!(out.created, [p("new"), p("z2")]);
    assert_eq!(out.removed, [p("gone")]);
    assert_eq!(out.modified, [p("w2")]);
}
