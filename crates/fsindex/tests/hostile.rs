//! Hostile input: names with newlines and bytes that are not UTF-8, the
//! longest names, ids that are prefixes of each other, and lengths past
//! the limits (refused when added, with a typed error).

use weir_fsindex::{Entry, Error, Index, Kind};

fn file(id: &[u8]) -> Entry {
    Entry {
        id: id.to_vec(),
        kind: Kind::File,
        attrs: None,
    }
}

#[test]
fn prefix_scans_do_not_mix_ids_that_are_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path().join("i")).unwrap();
    let mut b = index.batch();
    let r = b.create_root(b"/r", b"root", b"log").unwrap();
    let long = vec![b'n'; 255];
    let names: [&[u8]; 4] = [b"a\nb", b"\xff\xfe", &long, b""];
    // `a` is a prefix of `ab`; `\x01a` is what `a`'s key part looks like
    // with its length byte.
    let dirs: [&[u8]; 4] = [b"a", b"ab", b"\x01a", b"a\x01"];
    for d in dirs {
        for n in names {
            let mut id = d.to_vec();
            id.extend_from_slice(n);
            b.put_entry(r, d, n, &file(&id[..id.len().min(255)]))
                .unwrap();
        }
    }
    b.put_entry(r, b"ab", b"link", &file(b"a")).unwrap();
    b.put_entry(r, b"a", b"link", &file(b"a")).unwrap();
    index.commit(b).unwrap();
    let snap = index.snapshot().unwrap();
    for d in dirs {
        let got: Vec<Vec<u8>> = snap
            .children(r, d)
            .unwrap()
            .map(|e| e.unwrap().name)
            .collect();
        let mut want: Vec<Vec<u8>> = names.iter().map(|n| n.to_vec()).collect();
        if d == b"a" || d == b"ab" {
            want.push(b"link".to_vec());
        }
        want.sort();
        assert_eq!(got, want, "children of {d:?}");
    }
    let mut links: Vec<Vec<u8>> = snap
        .entries(r)
        .unwrap()
        .map(Result::unwrap)
        .filter(|e| e.entry.id == b"a")
        .map(|e| e.parent)
        .collect();
    links.sort();
    // `a` in `a` (its own id plus the empty name), and the two links.
    assert_eq!(links, [b"a".to_vec(), b"a".to_vec(), b"ab".to_vec()]);
    assert_eq!(snap.entries(r).unwrap().count(), 18);
    let e = snap.entry(r, b"a", b"a\nb").unwrap().unwrap();
    assert_eq!(e.id, b"aa\nb");
}

#[test]
fn lengths_past_the_limits_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path().join("i")).unwrap();
    let mut b = index.batch();
    let r = b.create_root(b"/r", b"root", b"log").unwrap();
    assert!(matches!(
        b.put_entry(r, b"d", &[b'x'; 256], &file(b"i")),
        Err(Error::NameLength { len: 256 })
    ));
    assert!(matches!(
        b.put_entry(r, b"", b"n", &file(b"i")),
        Err(Error::IdLength { len: 0 })
    ));
    assert!(matches!(
        b.put_entry(r, b"d", b"n", &file(&[1; 256])),
        Err(Error::IdLength { len: 256 })
    ));
    assert!(matches!(
        b.create_root(&vec![b'/'; 4097], b"i", b""),
        Err(Error::PathLength { len: 4097 })
    ));
    assert!(matches!(
        b.create_root(b"/s", &[], b""),
        Err(Error::IdLength { len: 0 })
    ));
    // What was refused is not in the batch; the rest commits.
    index.commit(b).unwrap();
    assert_eq!(
        index
            .snapshot()
            .unwrap()
            .root(b"/r")
            .unwrap()
            .unwrap()
            .entries,
        0
    );
}

#[test]
fn a_failed_commit_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path().join("i")).unwrap();
    let mut b = index.batch();
    let r = b.create_root(b"/r", b"root", b"log").unwrap();
    index.commit(b).unwrap();
    let mut b = index.batch();
    b.put_entry(r, b"d", b"n", &file(b"i")).unwrap();
    b.set_covered(r, 5);
    b.invalidate_dir_times(r, b"no such dir").unwrap();
    assert!(matches!(index.commit(b), Err(Error::NoDir { .. })));
    let root = index.snapshot().unwrap().root(b"/r").unwrap().unwrap();
    assert_eq!((root.entries, root.covered), (0, 0));
    let mut b = index.batch();
    b.create_root(b"/r", b"root2", b"log").unwrap();
    assert!(matches!(index.commit(b), Err(Error::RootExists { .. })));
}
