//! The on-disk format: a version 1 file kept as a fixture reads back
//! exactly, and foreign, damaged, newer or locked files are refused with a
//! typed error, never a panic.

use std::path::{Path, PathBuf};

use weir_fsindex::{Attrs, Dir, Entry, Error, Index, Kind, RootState, Timestamp};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1/index.redb")
}

const T: Timestamp = Timestamp {
    sec: 1_700_000_000,
    nsec: 123_456_789,
};

/// Writes what the fixture holds. `cargo test -p weir-fsindex --test
/// format -- --ignored write_fixture` makes it again (only a new format
/// version should).
fn fill(index: &Index) {
    let mut b = index.batch();
    let r = b
        .create_root(b"/srv/data", b"\x00\x00\x00\x01root", b"incarnation-7")
        .unwrap();
    let dir = |parent: Option<&[u8]>, name: &[u8], valid| Dir {
        parent: parent.map(<[u8]>::to_vec),
        name: name.to_vec(),
        mtime: T,
        ctime: T,
        times_valid: valid,
    };
    b.put_dir(r, b"\x00\x00\x00\x01root", &dir(None, b"", true))
        .unwrap();
    b.put_dir(
        r,
        b"sub",
        &dir(Some(b"\x00\x00\x00\x01root"), b"sub\n\xff", false),
    )
    .unwrap();
    let attrs = Attrs {
        size: 4096,
        mtime: T,
        ctime: T,
        nlink: 2,
    };
    let f = Entry {
        id: b"file-id".to_vec(),
        kind: Kind::File,
        attrs: Some(attrs),
    };
    b.put_entry(
        r,
        b"\x00\x00\x00\x01root",
        b"sub\n\xff",
        &Entry {
            id: b"sub".to_vec(),
            kind: Kind::Dir,
            attrs: None,
        },
    )
    .unwrap();
    b.put_entry(r, b"\x00\x00\x00\x01root", b"a", &f).unwrap();
    b.put_entry(r, b"sub", b"hard link", &f).unwrap();
    b.put_entry(
        r,
        b"sub",
        b"l",
        &Entry {
            id: b"sym".to_vec(),
            kind: Kind::Symlink,
            attrs: None,
        },
    )
    .unwrap();
    b.set_covered(r, 42);
    index.commit(b).unwrap();
}

#[test]
#[ignore = "writes the fixture"]
fn write_fixture() {
    let path = fixture();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut index = Index::open(&path).unwrap();
    fill(&index);
    // As small as redb makes it: the free space of its first allocation
    // given back.
    index.compact().unwrap();
}

fn copy_of_fixture(dir: &Path) -> PathBuf {
    let p = dir.join("index.redb");
    std::fs::copy(fixture(), &p).unwrap();
    p
}

#[test]
fn reads_the_v1_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(copy_of_fixture(dir.path())).unwrap();
    let snap = index.snapshot().unwrap();
    let root = snap.root(b"/srv/data").unwrap().unwrap();
    assert_eq!(root.id, b"\x00\x00\x00\x01root");
    assert_eq!(root.log_identity, b"incarnation-7");
    assert_eq!(
        (root.covered, root.dirs, root.entries, root.state),
        (42, 2, 4, RootState::Complete)
    );
    let sub = snap.dir(root.no, b"sub").unwrap().unwrap();
    assert_eq!(sub.name, b"sub\n\xff");
    assert!(!sub.times_valid);
    assert_eq!(sub.mtime, T);
    let f = snap.entry(root.no, b"sub", b"hard link").unwrap().unwrap();
    assert_eq!(f.attrs.unwrap().size, 4096);
    let sym = snap.entry(root.no, b"sub", b"l").unwrap().unwrap();
    assert_eq!((sym.id.as_slice(), sym.kind), (&b"sym"[..], Kind::Symlink));
    let a = snap
        .entry(root.no, b"\x00\x00\x00\x01root", b"a")
        .unwrap()
        .unwrap();
    assert_eq!(a.id, b"file-id");
    assert_eq!(snap.entries(root.no).unwrap().count(), 4);
    // The same writes today make the same rows.
    let fresh = Index::open(dir.path().join("fresh")).unwrap();
    fill(&fresh);
    let a: Vec<_> = snap.entries(root.no).unwrap().map(Result::unwrap).collect();
    let s2 = fresh.snapshot().unwrap();
    let r2 = s2.root(b"/srv/data").unwrap().unwrap();
    assert_eq!(
        a,
        s2.entries(r2.no)
            .unwrap()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
    );
}

fn open_err(bytes: &[u8]) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    std::fs::write(&p, bytes).unwrap();
    Index::open(&p).unwrap_err()
}

#[test]
fn a_foreign_file_is_refused() {
    assert!(matches!(
        open_err(b"not a database at all\n"),
        Error::NotAnIndex { .. }
    ));
    assert!(matches!(
        open_err(&vec![0x5a; 64 * 1024]),
        Error::NotAnIndex { .. }
    ));
    // A redb database of something else.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("other");
    let db = redb::Database::create(&p).unwrap();
    let tx = db.begin_write().unwrap();
    tx.open_table(redb::TableDefinition::<u64, u64>::new("other"))
        .unwrap()
        .insert(1, 2)
        .unwrap();
    tx.commit().unwrap();
    drop(db);
    assert!(matches!(Index::open(&p), Err(Error::Foreign { .. })));
}

#[test]
fn a_newer_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = copy_of_fixture(dir.path());
    let db = redb::Database::create(&p).unwrap();
    let tx = db.begin_write().unwrap();
    let meta = redb::TableDefinition::<&str, &[u8]>::new("weir_fsindex_meta");
    tx.open_table(meta)
        .unwrap()
        .insert("format", 2u32.to_le_bytes().as_slice())
        .unwrap();
    tx.commit().unwrap();
    drop(db);
    match Index::open(&p) {
        Err(Error::UnknownVersion {
            found: 2, known: 1, ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_damaged_file_is_an_error_not_a_panic() {
    let good = std::fs::read(fixture()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("damaged");
    // Truncations and flipped bytes across the file: each open or read
    // either works (the damage was in free space) or fails with an error.
    let mut cases: Vec<Vec<u8>> = [16, 512, 4096, good.len() / 2]
        .iter()
        .map(|&n| good[..n].to_vec())
        .collect();
    for at in (0..good.len()).step_by(good.len() / 24 + 1) {
        let mut b = good.clone();
        b[at] ^= 0x5a;
        cases.push(b);
    }
    for bytes in cases {
        std::fs::write(&p, &bytes).unwrap();
        let Ok(index) = Index::open(&p) else { continue };
        let Ok(snap) = index.snapshot() else { continue };
        if let Ok(roots) = snap.roots() {
            for r in roots {
                if let Ok(it) = snap.entries(r.no) {
                    it.for_each(drop);
                }
            }
        }
    }
}

#[test]
fn a_second_open_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("i");
    let _first = Index::open(&p).unwrap();
    assert!(matches!(Index::open(&p), Err(Error::Locked { .. })));
}
