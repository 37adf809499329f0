//! Builds in chunks: a root being built is marked so until its last
//! chunk, and only then replaces the complete root of its path.

use weir_fsindex::{Dir, Entry, Index, Kind, RootState, Timestamp};

#[test]
fn a_build_replaces_the_root_only_when_it_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i");
    let index = Index::open(&path).unwrap();
    let mut b = index.batch();
    let old = b.create_root(b"/r", b"root", b"log").unwrap();
    b.put_entry(
        old,
        b"root",
        b"old",
        &Entry {
            id: b"o".to_vec(),
            kind: Kind::File,
            attrs: None,
        },
    )
    .unwrap();
    index.commit(b).unwrap();

    let mut build = index.replace_root(b"/r", b"root", b"log-2", 10).unwrap();
    let t = Timestamp { sec: 1, nsec: 2 };
    build
        .put_dir(
            b"root",
            &Dir {
                parent: None,
                name: vec![],
                mtime: t,
                ctime: t,
                times_valid: true,
            },
        )
        .unwrap();
    for i in 0..95u32 {
        let e = Entry {
            id: i.to_be_bytes().to_vec(),
            kind: Kind::File,
            attrs: None,
        };
        build.put_entry(b"root", &i.to_be_bytes(), &e).unwrap();
    }
    let new = build.root();
    // Chunks are committed, but the root is building: `root(path)` still
    // finds the old one.
    let snap = index.snapshot().unwrap();
    assert_eq!(snap.root(b"/r").unwrap().unwrap().no, old);
    let building = snap.root_by_no(new).unwrap().unwrap();
    assert_eq!(building.state, RootState::Building);
    // 96 rows in chunks of 10: 90 committed, the directory and 89 entries.
    assert_eq!((building.dirs, building.entries), (1, 89));
    drop(snap);
    assert_eq!(build.finish(77).unwrap(), new);

    let index = {
        drop(index);
        Index::open(&path).unwrap()
    };
    let snap = index.snapshot().unwrap();
    let roots = snap.roots().unwrap();
    assert_eq!(roots.len(), 1, "the old root is dropped");
    let r = &roots[0];
    assert_eq!(
        (r.no, r.state, r.covered, r.entries, r.dirs),
        (new, RootState::Complete, 77, 95, 1)
    );
    assert_eq!(r.log_identity, b"log-2");
    assert_eq!(snap.entries(new).unwrap().count(), 95);
    assert!(snap.entries(old).unwrap().next().is_none());
}

#[test]
fn an_abandoned_build_stays_building() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path().join("i")).unwrap();
    let mut build = index.replace_root(b"/r", b"root", b"log", 2).unwrap();
    for i in 0..5u8 {
        build
            .put_entry(
                b"root",
                &[i],
                &Entry {
                    id: vec![i],
                    kind: Kind::Dir,
                    attrs: None,
                },
            )
            .unwrap();
    }
    let no = build.root();
    drop(build);
    let snap = index.snapshot().unwrap();
    assert!(snap.root(b"/r").unwrap().is_none());
    assert_eq!(
        snap.root_by_no(no).unwrap().unwrap().state,
        RootState::Building
    );
    drop(snap);
    let mut b = index.batch();
    b.drop_root(no);
    index.commit(b).unwrap();
    let snap = index.snapshot().unwrap();
    assert!(snap.roots().unwrap().is_empty());
    assert!(snap.entries(no).unwrap().next().is_none());
}
