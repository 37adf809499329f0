//! A directory replaced whole (`Batch::replace_dir`) or dropped whole
//! (`Batch::drop_dir`), across bucket counts, as a checkpoint of a
//! directory's image does.

use weir_fsindex::{Dir, Entry, Index, Kind, RootNo, Timestamp};

fn entry(i: u32) -> Entry {
    Entry {
        id: format!("id{i}").into_bytes(),
        kind: if i.is_multiple_of(7) {
            Kind::Dir
        } else {
            Kind::File
        },
        attrs: None,
    }
}

fn dir(name: &[u8]) -> Dir {
    Dir {
        parent: Some(b"root".to_vec()),
        name: name.to_vec(),
        mtime: Timestamp::default(),
        ctime: Timestamp::default(),
        times_valid: false,
    }
}

fn names(n: u32, tag: &str) -> Vec<(Vec<u8>, Entry)> {
    (0..n)
        .map(|i| (format!("{tag}{i}").into_bytes(), entry(i)))
        .collect()
}

fn replace(index: &Index, no: RootNo, id: &[u8], d: &Dir, es: &[(Vec<u8>, Entry)]) {
    let mut b = index.batch();
    b.replace_dir(no, id, d, es.iter().map(|(n, e)| (&n[..], e)))
        .unwrap();
    index.commit(b).unwrap();
}

fn children(index: &Index, no: RootNo, id: &[u8]) -> Vec<(Vec<u8>, Entry)> {
    let snap = index.snapshot().unwrap();
    snap.children(no, id)
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (r.name, r.entry)
        })
        .collect()
}

#[test]
fn a_directory_replaced_whole_holds_exactly_its_new_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::open(tmp.path().join("index.redb")).unwrap();
    let mut b = index.batch();
    let no = b.create_root(b"/r", b"root", b"log").unwrap();
    index.commit(b).unwrap();
    // Grow past several bucket doublings, shrink back, change names.
    for (n, tag) in [(10, "a"), (3000, "b"), (5, "c"), (0, "d"), (700, "e")] {
        let want = names(n, tag);
        replace(&index, no, b"d1", &dir(tag.as_bytes()), &want);
        let mut want_sorted = want.clone();
        want_sorted.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(children(&index, no, b"d1"), want_sorted, "{n} entries");
        let snap = index.snapshot().unwrap();
        assert_eq!(snap.dir(no, b"d1").unwrap(), Some(dir(tag.as_bytes())));
        let root = snap.root_by_no(no).unwrap().unwrap();
        assert_eq!(root.entries, u64::from(n), "the root's count");
    }
    // A second directory is untouched by the first's replacements.
    replace(&index, no, b"d2", &dir(b"two"), &names(50, "z"));
    replace(&index, no, b"d1", &dir(b"one"), &names(1, "y"));
    assert_eq!(children(&index, no, b"d2").len(), 50);
    // Dropped whole: no row, no entries, counts back.
    let mut b = index.batch();
    b.drop_dir(no, b"d2").unwrap();
    index.commit(b).unwrap();
    let snap = index.snapshot().unwrap();
    assert_eq!(snap.dir(no, b"d2").unwrap(), None);
    assert!(children(&index, no, b"d2").is_empty());
    let root = snap.root_by_no(no).unwrap().unwrap();
    assert_eq!((root.entries, root.dirs), (1, 1));
    // Dropping what is not there is nothing.
    let mut b = index.batch();
    b.drop_dir(no, b"never").unwrap();
    index.commit(b).unwrap();
}

/// Edits before a replacement in the same batch are replaced too.
#[test]
fn a_replacement_wins_over_earlier_edits_in_its_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::open(tmp.path().join("index.redb")).unwrap();
    let mut b = index.batch();
    let no = b.create_root(b"/r", b"root", b"log").unwrap();
    b.put_entry(no, b"d", b"before", &entry(1)).unwrap();
    let want = names(3, "after");
    b.replace_dir(no, b"d", &dir(b"d"), want.iter().map(|(n, e)| (&n[..], e)))
        .unwrap();
    b.put_entry(no, b"d", b"later", &entry(9)).unwrap();
    index.commit(b).unwrap();
    let got: Vec<Vec<u8>> = children(&index, no, b"d")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        got,
        [&b"after0"[..], b"after1", b"after2", b"later"].map(<[u8]>::to_vec)
    );
}
