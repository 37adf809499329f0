//! What the integration tests share: a model of the index in BTreeMaps,
//! hostile ids and names, and the comparison of every read with the model.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use weir_fsindex::{Dir, Entry, EntryRow, Index, RootNo, RootState};

/// Ids whose prefixes collide: each of `a`, `ab`, `abc` is a prefix of the
/// next, and `\x02a` starts like a length byte of 2 followed by `a`.
pub const IDS: [&[u8]; 7] = [
    b"a",
    b"ab",
    b"abc",
    b"\x02a",
    b"\xff",
    b"\xff\xff",
    b"\x01\x00\x00\x00\x01",
];

const LONG: &[u8] = &[b'n'; 255];

/// Names: empty, with a newline, not UTF-8, the longest allowed, and one
/// that is a prefix of another.
pub const NAMES: [&[u8]; 6] = [b"", b"x", b"x\n", b"\xff\xfe\x00", LONG, b"xy"];

#[derive(Clone, Debug)]
pub struct ModelRoot {
    pub path: Vec<u8>,
    pub id: Vec<u8>,
    pub log_identity: Vec<u8>,
    pub covered: u64,
    pub building: bool,
    pub dirs: BTreeMap<Vec<u8>, Dir>,
    pub entries: BTreeMap<(Vec<u8>, Vec<u8>), Entry>,
}

impl ModelRoot {
    pub fn new(path: &[u8], id: &[u8], log_identity: &[u8]) -> ModelRoot {
        ModelRoot {
            path: path.to_vec(),
            id: id.to_vec(),
            log_identity: log_identity.to_vec(),
            covered: 0,
            building: false,
            dirs: BTreeMap::new(),
            entries: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Model {
    pub roots: BTreeMap<u32, ModelRoot>,
}

fn row_key(r: &EntryRow) -> (Vec<u8>, Vec<u8>) {
    (r.parent.clone(), r.name.clone())
}

/// Every read of `index` agrees with `model`.
pub fn assert_matches(index: &Index, model: &Model) {
    let snap = index.snapshot().unwrap();
    let roots = snap.roots().unwrap();
    assert_eq!(
        roots.iter().map(|r| r.no.0).collect::<Vec<_>>(),
        model.roots.keys().copied().collect::<Vec<_>>()
    );
    for r in &roots {
        let m = &model.roots[&r.no.0];
        assert_eq!(
            (&r.path, &r.id, &r.log_identity),
            (&m.path, &m.id, &m.log_identity)
        );
        assert_eq!(r.state == RootState::Building, m.building);
        assert_eq!(r.covered, m.covered);
        assert_eq!(r.entries, m.entries.len() as u64, "entry count");
        assert_eq!(r.dirs, m.dirs.len() as u64, "dir count");
        assert_eq!(snap.root_by_no(r.no).unwrap().as_ref(), Some(r));
        if !m.building {
            assert_eq!(snap.root(&m.path).unwrap().as_ref(), Some(r));
        }
        check_root(&snap, r.no, m);
    }
}

fn check_root(snap: &weir_fsindex::Snapshot, no: RootNo, m: &ModelRoot) {
    let all: Vec<EntryRow> = snap.entries(no).unwrap().map(Result::unwrap).collect();
    let got: BTreeMap<_, _> = all.iter().map(|r| (row_key(r), r.entry.clone())).collect();
    assert_eq!(got.len(), all.len(), "an entry listed twice");
    assert_eq!(got, m.entries, "entries");
    let mut lent = BTreeMap::new();
    snap.for_each_entry(no, |e| {
        lent.insert((e.parent.to_vec(), e.name.to_vec()), e.entry());
    })
    .unwrap();
    assert_eq!(lent, m.entries, "entries lent in place");
    let dirs: BTreeMap<_, _> = snap.dirs(no).unwrap().map(Result::unwrap).collect();
    assert_eq!(dirs, m.dirs, "dirs");
    for id in super::common::IDS {
        assert_eq!(snap.dir(no, id).unwrap().as_ref(), m.dirs.get(id));
        let children: Vec<(Vec<u8>, Entry)> = snap
            .children(no, id)
            .unwrap()
            .map(|r| r.unwrap())
            .map(|r| (r.name, r.entry))
            .collect();
        let want: Vec<(Vec<u8>, Entry)> = m
            .entries
            .iter()
            .filter(|((p, _), _)| p == id)
            .map(|((_, n), e)| (n.clone(), e.clone()))
            .collect();
        assert_eq!(children, want, "children of {id:?} (by name)");
        for name in NAMES {
            assert_eq!(
                snap.entry(no, id, name).unwrap().as_ref(),
                m.entries.get(&(id.to_vec(), name.to_vec()))
            );
        }
    }
}
