//! The index against a model of BTreeMaps: random batches (with ids that
//! are prefixes of each other and hostile names) applied to both, and
//! every read compared after each commit and after each reopen.

mod common;

use std::collections::BTreeMap;

use common::{IDS, Model, ModelRoot, NAMES, assert_matches};
use proptest::prelude::*;
use weir_fsindex::{Attrs, Dir, Entry, Error, Index, Kind, RootNo, Timestamp};

#[derive(Clone, Debug)]
enum Op {
    Create(usize),
    Drop(usize),
    PutEntry {
        root: usize,
        parent: usize,
        name: usize,
        id: usize,
        kind: usize,
        size: Option<u64>,
    },
    RemoveEntry {
        root: usize,
        parent: usize,
        name: usize,
    },
    PutDir {
        root: usize,
        id: usize,
        parent: Option<usize>,
        name: usize,
        t: i64,
        valid: bool,
    },
    RemoveDir {
        root: usize,
        id: usize,
    },
    SetTimes {
        root: usize,
        id: usize,
        t: i64,
    },
    Invalidate {
        root: usize,
        id: usize,
    },
    Covered {
        root: usize,
        covered: u64,
    },
}

const PATHS: [&[u8]; 3] = [b"/a", b"/b", b"/a/\n\xff"];

fn op() -> impl Strategy<Value = Op> {
    let i = || 0..IDS.len();
    let n = || 0..NAMES.len();
    prop_oneof![
        1 => (0..PATHS.len()).prop_map(Op::Create),
        1 => (0..4usize).prop_map(Op::Drop),
        8 => (0..4usize, i(), n(), i(), 0..8usize, proptest::option::of(any::<u64>()))
            .prop_map(|(root, parent, name, id, kind, size)| Op::PutEntry { root, parent, name, id, kind, size }),
        4 => (0..4usize, i(), n()).prop_map(|(root, parent, name)| Op::RemoveEntry { root, parent, name }),
        3 => (0..4usize, i(), proptest::option::of(i()), n(), -3i64..3, any::<bool>())
            .prop_map(|(root, id, parent, name, t, valid)| Op::PutDir { root, id, parent, name, t, valid }),
        1 => (0..4usize, i()).prop_map(|(root, id)| Op::RemoveDir { root, id }),
        2 => (0..4usize, i(), -3i64..3).prop_map(|(root, id, t)| Op::SetTimes { root, id, t }),
        2 => (0..4usize, i()).prop_map(|(root, id)| Op::Invalidate { root, id }),
        2 => (0..4usize, 0..64u64).prop_map(|(root, covered)| Op::Covered { root, covered }),
    ]
}

fn ts(t: i64) -> Timestamp {
    Timestamp {
        sec: t,
        nsec: (t.unsigned_abs() as u32) * 7,
    }
}

/// Applies `ops` to a batch and to a copy of the model; the copy is what
/// the index must hold if the commit succeeds, `None` if it must fail.
fn build(index: &Index, model: &Model, ops: &[Op]) -> (weir_fsindex::Batch, Option<Model>) {
    let mut b = index.batch();
    let mut m = model.clone();
    let mut ok = true;
    // Roots with a change the commit would refuse (times of a missing
    // directory); dropping the root later in the batch discards it.
    let mut refused = std::collections::BTreeSet::new();
    // A slot names one of the roots the model holds (or, past their
    // count, a root that is not there).
    let slot = |m: &Model, s: usize| -> RootNo {
        m.roots
            .keys()
            .nth(s)
            .map(|&n| RootNo(n))
            .unwrap_or(RootNo(9999))
    };
    for op in ops {
        match *op {
            Op::Create(p) => {
                let no = b.create_root(PATHS[p], b"root-id", b"log-1").unwrap();
                if m.roots.values().any(|r| r.path == PATHS[p] && !r.building) {
                    ok = false;
                }
                m.roots
                    .insert(no.0, ModelRoot::new(PATHS[p], b"root-id", b"log-1"));
            }
            Op::Drop(s) => {
                let r = slot(&m, s);
                b.drop_root(r);
                ok &= m.roots.remove(&r.0).is_some();
                refused.remove(&r.0);
            }
            Op::PutEntry {
                root,
                parent,
                name,
                id,
                kind,
                size,
            } => {
                let r = slot(&m, root);
                let attrs = size.map(|size| Attrs {
                    size,
                    mtime: ts(1),
                    ctime: ts(2),
                    nlink: 2,
                });
                let e = Entry {
                    id: IDS[id].to_vec(),
                    kind: Kind::ALL[kind],
                    attrs,
                };
                b.put_entry(r, IDS[parent], NAMES[name], &e).unwrap();
                match m.roots.get_mut(&r.0) {
                    Some(mr) => drop(
                        mr.entries
                            .insert((IDS[parent].to_vec(), NAMES[name].to_vec()), e),
                    ),
                    None => ok = false,
                }
            }
            Op::RemoveEntry { root, parent, name } => {
                let r = slot(&m, root);
                b.remove_entry(r, IDS[parent], NAMES[name]).unwrap();
                match m.roots.get_mut(&r.0) {
                    Some(mr) => drop(
                        mr.entries
                            .remove(&(IDS[parent].to_vec(), NAMES[name].to_vec())),
                    ),
                    None => ok = false,
                }
            }
            Op::PutDir {
                root,
                id,
                parent,
                name,
                t,
                valid,
            } => {
                let r = slot(&m, root);
                let d = Dir {
                    parent: parent.map(|p| IDS[p].to_vec()),
                    name: NAMES[name].to_vec(),
                    mtime: ts(t),
                    ctime: ts(t + 1),
                    times_valid: valid,
                };
                b.put_dir(r, IDS[id], &d).unwrap();
                match m.roots.get_mut(&r.0) {
                    Some(mr) => drop(mr.dirs.insert(IDS[id].to_vec(), d)),
                    None => ok = false,
                }
            }
            Op::RemoveDir { root, id } => {
                let r = slot(&m, root);
                b.remove_dir(r, IDS[id]).unwrap();
                match m.roots.get_mut(&r.0) {
                    Some(mr) => drop(mr.dirs.remove(IDS[id])),
                    None => ok = false,
                }
            }
            Op::SetTimes { root, id, t } => {
                let r = slot(&m, root);
                b.set_dir_times(r, IDS[id], ts(t), ts(-t)).unwrap();
                match m.roots.get_mut(&r.0).map(|mr| mr.dirs.get_mut(IDS[id])) {
                    Some(Some(d)) => (d.mtime, d.ctime, d.times_valid) = (ts(t), ts(-t), true),
                    Some(None) => drop(refused.insert(r.0)),
                    None => ok = false,
                }
            }
            Op::Invalidate { root, id } => {
                let r = slot(&m, root);
                b.invalidate_dir_times(r, IDS[id]).unwrap();
                match m.roots.get_mut(&r.0).map(|mr| mr.dirs.get_mut(IDS[id])) {
                    Some(Some(d)) => d.times_valid = false,
                    Some(None) => drop(refused.insert(r.0)),
                    None => ok = false,
                }
            }
            Op::Covered { root, covered } => {
                let r = slot(&m, root);
                b.set_covered(r, covered);
                match m.roots.get_mut(&r.0) {
                    Some(mr) if covered >= mr.covered => mr.covered = covered,
                    _ => ok = false,
                }
            }
        }
    }
    ok &= refused.is_empty();
    (b, ok.then_some(m))
}

#[test]
fn dropping_a_root_discards_its_earlier_changes_refused_ones_included() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path().join("index")).unwrap();
    let mut b = index.batch();
    let no = b.create_root(b"/a", b"root-id", b"log-1").unwrap();
    index.commit(b).unwrap();

    let mut b = index.batch();
    b.set_dir_times(no, IDS[0], ts(1), ts(1)).unwrap();
    assert!(matches!(index.commit(b), Err(Error::NoDir { .. })));

    let mut b = index.batch();
    b.set_dir_times(no, IDS[0], ts(1), ts(1)).unwrap();
    b.drop_root(no);
    index.commit(b).unwrap();
    assert!(index.snapshot().unwrap().roots().unwrap().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn index_agrees_with_the_model(
        batches in proptest::collection::vec(proptest::collection::vec(op(), 1..12), 1..16),
        reopen_every in 1usize..5,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        let mut index = Index::open(&path).unwrap();
        let mut model = Model { roots: BTreeMap::new() };
        for (i, ops) in batches.iter().enumerate() {
            let (batch, expected) = build(&index, &model, ops);
            match (index.commit(batch), expected) {
                (Ok(()), Some(m)) => model = m,
                (Err(Error::NoRoot(_) | Error::NoDir { .. } | Error::RootExists { .. } | Error::CoveredBackwards { .. }), None) => {}
                (got, want) => panic!("commit gave {got:?}, the model expected success: {}", want.is_some()),
            }
            assert_matches(&index, &model);
            if i % reopen_every == 0 {
                drop(index);
                index = Index::open(&path).unwrap();
                assert_matches(&index, &model);
            }
        }
    }
}
