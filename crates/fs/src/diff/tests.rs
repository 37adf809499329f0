//! The comparison on random trees: applying `diff(a, b)` to `a` gives `b`
//! whatever the two are, renames are found by id, and an unchanged tree
//! gives nothing.

use proptest::prelude::*;

use super::*;
use crate::kind::Kind;
use weir_sys::fanotify::fid::FileHandle;

fn oid(n: u32) -> ObjectId {
    ObjectId::from_handle([7, 7], &FileHandle::new(1, &n.to_be_bytes()).unwrap())
}

/// A tree built from a list of (parent pick, name, id, is_dir) choices:
/// each parent is one of the directories made so far.
fn build(root: &ObjectId, spec: &[(usize, u8, u32, bool)]) -> Tree {
    let mut t = Tree::new(root.clone());
    let mut dirs = vec![root.clone()];
    for &(p, name, id, _) in spec {
        // An id's kind never changes: even ids are directories.
        let is_dir = id % 2 == 0;
        let parent = dirs[p % dirs.len()].clone();
        let id = oid(id);
        if t.has_dir(&id) || (is_dir && t.contains(&id)) {
            continue;
        }
        let kind = if is_dir { Kind::Dir } else { Kind::File };
        if t.lookup(&parent, &[name]).is_some() {
            continue;
        }
        if t.insert(
            &parent,
            &[name],
            Entry {
                id: id.clone(),
                kind,
            },
        )
        .is_ok()
            && is_dir
        {
            dirs.push(id);
        }
    }
    t
}

fn check(a: &Tree, b: &Tree) -> Vec<Change> {
    let changes = diff(a, b);
    let mut w = a.clone();
    for c in &changes {
        c.apply(&mut w)
            .unwrap_or_else(|e| panic!("{c:?} does not apply: {e}"));
    }
    assert_eq!(w.listing(), b.listing(), "changes {changes:#?}");
    // Scoped to the directories that differ: changes that apply and give
    // `b` too (their order, and so which name of a hard-linked file pairs
    // with which, may differ from the whole comparison's).
    let scoped = diff_in(a, b, &differing(a, b));
    let mut w = a.clone();
    for c in &scoped {
        c.apply(&mut w)
            .unwrap_or_else(|e| panic!("scoped: {c:?} does not apply: {e}"));
    }
    assert_eq!(w.listing(), b.listing(), "scoped changes {scoped:#?}");
    changes
}

/// The directories whose entries differ between `a` and `b`, and those
/// only one of them has: what a rescan reads, and the subtrees it finds
/// gone.
fn differing(a: &Tree, b: &Tree) -> Set<ObjectId> {
    let dirs = |t: &Tree| -> Vec<ObjectId> {
        std::iter::once(t.root().clone())
            .chain(
                t.links_top_down()
                    .into_iter()
                    .filter(|l| l.2.kind.is_dir())
                    .map(|l| l.2.id),
            )
            .collect()
    };
    let entries = |t: &Tree, d: &ObjectId| {
        let mut v: Vec<(Vec<u8>, Entry)> = t.entries_of(d).map(|(n, e)| (n.to_vec(), e)).collect();
        v.sort_by(|x, y| x.0.cmp(&y.0));
        v
    };
    dirs(a)
        .into_iter()
        .chain(dirs(b))
        .filter(|d| !a.has_dir(d) || !b.has_dir(d) || entries(a, d) != entries(b, d))
        .collect()
}

#[test]
fn equal_trees_need_nothing() {
    let r = oid(0);
    let a = build(&r, &[(0, b'a', 2, true), (1, b'b', 3, false)]);
    assert!(check(&a, &a.clone()).is_empty());
}

#[test]
fn a_moved_directory_is_one_rename_and_keeps_its_subtree() {
    let r = oid(0);
    let mut a = Tree::new(r.clone());
    a.insert(
        &r,
        b"x",
        Entry {
            id: oid(1),
            kind: Kind::Dir,
        },
    )
    .unwrap();
    a.insert(
        &r,
        b"y",
        Entry {
            id: oid(2),
            kind: Kind::Dir,
        },
    )
    .unwrap();
    a.insert(
        &oid(1),
        b"f",
        Entry {
            id: oid(3),
            kind: Kind::File,
        },
    )
    .unwrap();
    let mut b = a.clone();
    b.rename(&r, b"x", &oid(2), b"x2").unwrap();
    let c = check(&a, &b);
    assert_eq!(c.len(), 1, "{c:#?}");
    assert!(matches!(&c[0], Change::Rename { entry, .. } if entry.id == oid(1)));
    // Scoped to the two directories whose entries changed, the same.
    let scoped = diff_in(&a, &b, &differing(&a, &b));
    assert_eq!(scoped, c);
}

#[test]
fn swapped_entries_are_one_exchange() {
    let r = oid(0);
    let mut a = Tree::new(r.clone());
    a.insert(
        &r,
        b"a",
        Entry {
            id: oid(1),
            kind: Kind::File,
        },
    )
    .unwrap();
    a.insert(
        &r,
        b"b",
        Entry {
            id: oid(2),
            kind: Kind::Dir,
        },
    )
    .unwrap();
    let mut b = a.clone();
    b.exchange((&r, b"a"), (&r, b"b")).unwrap();
    let c = check(&a, &b);
    assert_eq!(c.len(), 1, "{c:#?}");
    assert!(matches!(
        &c[0],
        Change::Rename {
            exchanged: Some(_),
            ..
        }
    ));
}

#[test]
fn a_rename_over_a_file_overwrites_it() {
    let r = oid(0);
    let mut a = Tree::new(r.clone());
    a.insert(
        &r,
        b"a",
        Entry {
            id: oid(1),
            kind: Kind::File,
        },
    )
    .unwrap();
    a.insert(
        &r,
        b"b",
        Entry {
            id: oid(2),
            kind: Kind::File,
        },
    )
    .unwrap();
    let mut b = a.clone();
    b.rename(&r, b"a", &r, b"b").unwrap();
    let c = check(&a, &b);
    assert!(
        matches!(&c[..], [Change::Rename { overwritten: Some((o, true)), .. }] if o.id == oid(2)),
        "{c:#?}"
    );
}

#[test]
fn removals_are_deepest_first_and_creations_parents_first() {
    let r = oid(0);
    let a = build(
        &r,
        &[(0, b'a', 2, true), (1, b'b', 4, true), (2, b'c', 3, false)],
    );
    let b = Tree::new(r.clone());
    let c = check(&a, &b);
    let ids: Vec<_> = c.iter().map(|c| c.id().clone()).collect();
    assert_eq!(ids, [oid(3), oid(4), oid(2)]);
    let c = check(&b, &a);
    let ids: Vec<_> = c.iter().map(|c| c.id().clone()).collect();
    assert_eq!(ids, [oid(2), oid(4), oid(3)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn any_two_trees(
        a in proptest::collection::vec((0usize..8, 0u8..6, 1u32..24, any::<bool>()), 0..30),
        b in proptest::collection::vec((0usize..8, 0u8..6, 1u32..24, any::<bool>()), 0..30),
    ) {
        let r = oid(0);
        let (ta, tb) = (build(&r, &a), build(&r, &b));
        check(&ta, &tb);
    }

    #[test]
    fn a_few_changes_to_one_tree(
        a in proptest::collection::vec((0usize..8, 0u8..6, 1u32..24, any::<bool>()), 0..30),
        moves in proptest::collection::vec((any::<proptest::sample::Index>(), any::<proptest::sample::Index>(), 0u8..6), 0..6),
    ) {
        let r = oid(0);
        let ta = build(&r, &a);
        let mut tb = ta.clone();
        for (from, to, name) in moves {
            let links = tb.links_top_down();
            if links.is_empty() { break; }
            let (p, n, _, _) = &links[from.index(links.len())];
            let dirs: Vec<ObjectId> = std::iter::once(r.clone()).chain(links.iter().filter(|l| l.2.kind.is_dir()).map(|l| l.2.id.clone())).collect();
            let d = &dirs[to.index(dirs.len())];
            let _ = tb.rename(&p.clone(), &n.clone(), &d.clone(), &[name]);
        }
        check(&ta, &tb);
    }
}
