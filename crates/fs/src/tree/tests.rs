//! The tree's operations: paths, link counts, moves of whole subtrees,
//! exchanges, and the refusals.

use super::*;
use weir_sys::fanotify::fid::FileHandle;

fn oid(n: u32) -> ObjectId {
    ObjectId::from_handle([1, 2], &FileHandle::new(1, &n.to_be_bytes()).unwrap())
}

fn dir(n: u32) -> Entry {
    Entry {
        id: oid(n),
        kind: Kind::Dir,
    }
}

fn file(n: u32) -> Entry {
    Entry {
        id: oid(n),
        kind: Kind::File,
    }
}

fn path(t: &Tree, parent: u32, name: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    assert!(t.entry_path(&oid(parent), name, &mut p));
    p
}

#[test]
fn paths_follow_a_renamed_directory() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    t.insert(&r, b"a", dir(1)).unwrap();
    t.insert(&oid(1), b"b", dir(2)).unwrap();
    t.insert(&oid(2), b"f\n\xff", file(3)).unwrap();
    assert_eq!(path(&t, 2, b"f\n\xff"), b"a/b/f\n\xff");
    t.rename(&r, b"a", &r, b"z").unwrap();
    assert_eq!(path(&t, 2, b"f\n\xff"), b"z/b/f\n\xff");
    assert_eq!(path(&t, 0, b"z"), b"z");
    assert_eq!(t.len(), 3);
    let mut p = Vec::new();
    assert!(!t.dir_path(&oid(9), &mut p));
}

#[test]
fn hard_links_are_counted_and_the_last_is_known() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    t.insert(&r, b"a", file(1)).unwrap();
    t.insert(&r, b"b", file(1)).unwrap();
    assert_eq!(t.links(&oid(1)), 2);
    t.remove(&r, b"a");
    assert_eq!(t.links(&oid(1)), 1);
    assert!(t.contains(&oid(1)));
    t.remove(&r, b"b");
    assert!(!t.contains(&oid(1)));
    assert!(t.is_empty());
}

#[test]
fn removing_a_directory_forgets_its_subtree() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    t.insert(&r, b"a", dir(1)).unwrap();
    t.insert(&oid(1), b"b", dir(2)).unwrap();
    t.insert(&oid(2), b"f", file(3)).unwrap();
    t.insert(&r, b"g", file(3)).unwrap();
    t.remove(&r, b"a");
    assert!(!t.has_dir(&oid(1)) && !t.has_dir(&oid(2)));
    assert_eq!(t.links(&oid(3)), 1);
    assert_eq!(t.len(), 1);
}

#[test]
fn a_rename_over_an_entry_returns_it_and_a_directory_cannot_go_below_itself() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    t.insert(&r, b"a", dir(1)).unwrap();
    t.insert(&oid(1), b"b", dir(2)).unwrap();
    t.insert(&r, b"f", file(3)).unwrap();
    t.insert(&r, b"g", file(4)).unwrap();
    assert_eq!(t.rename(&r, b"f", &r, b"g").unwrap(), Some(file(4)));
    assert_eq!(
        t.rename(&r, b"a", &oid(2), b"x"),
        Err(TreeError::IntoItself)
    );
    assert_eq!(t.rename(&r, b"nope", &r, b"x"), Err(TreeError::NoSource));
    assert_eq!(t.insert(&oid(9), b"x", file(5)), Err(TreeError::NoParent));
    assert_eq!(t.rename(&r, b"g", &r, b"g"), Ok(None));
    assert_eq!(t.lookup(&r, b"g"), Some(file(3)));
}

#[test]
fn an_exchange_swaps_a_file_and_a_directory() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    t.insert(&r, b"a", dir(1)).unwrap();
    t.insert(&oid(1), b"in", file(2)).unwrap();
    t.insert(&r, b"b", file(3)).unwrap();
    t.exchange((&r, b"a"), (&r, b"b")).unwrap();
    assert_eq!(t.lookup(&r, b"a"), Some(file(3)));
    assert_eq!(t.lookup(&r, b"b"), Some(dir(1)));
    assert_eq!(path(&t, 1, b"in"), b"b/in");
    assert_eq!(
        t.exchange((&r, b"b"), (&oid(1), b"in")),
        Err(TreeError::IntoItself)
    );
}

#[test]
fn hostile_names_are_held_as_given() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    let long = vec![0xffu8; 255];
    let names: [&[u8]; 5] = [&long, b"\n", b"\xff\xfe\x80", b"a\nb", b""];
    for (i, n) in names.iter().enumerate() {
        t.insert(&r, n, file(i as u32 + 1)).unwrap();
    }
    for (i, n) in names.iter().enumerate() {
        assert_eq!(t.lookup(&r, n), Some(file(i as u32 + 1)));
        assert_eq!(path(&t, 0, n), *n);
    }
    // A name longer than any directory can hold is refused, and the tree
    // is as it was.
    let too_long = vec![b'x'; 256];
    assert_eq!(
        t.insert(&r, &too_long, file(9)),
        Err(TreeError::NameTooLong)
    );
    assert_eq!(
        t.rename(&r, b"\n", &r, &too_long),
        Err(TreeError::NameTooLong)
    );
    assert_eq!(t.len(), names.len());
    assert_eq!(t.lookup(&r, b"\n"), Some(file(2)));
    t.rename(&r, &long, &r, b"short").unwrap();
    t.rename(&r, b"short", &r, &long[..200]).unwrap();
    assert_eq!(t.lookup(&r, &long[..200]), Some(file(1)));
}

#[test]
fn a_thousand_deep_tree_has_its_paths_and_goes_at_once() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    for d in 1..=1000 {
        t.insert(&oid(d - 1), b"d", dir(d)).unwrap();
    }
    t.insert(&oid(1000), b"f", file(5000)).unwrap();
    let mut want = b"d/".repeat(1000);
    want.extend_from_slice(b"f");
    assert_eq!(path(&t, 1000, b"f"), want);
    assert!(t.is_ancestor(&oid(1), &oid(1000)));
    assert_eq!(
        t.rename(&r, b"d", &oid(999), b"x"),
        Err(TreeError::IntoItself)
    );
    // The deepest directory moved to the top takes its file along.
    t.rename(&oid(999), b"d", &r, b"top").unwrap();
    assert_eq!(path(&t, 1000, b"f"), b"top/f");
    assert_eq!(t.remove(&r, b"d"), Some(dir(1)));
    assert_eq!(t.len(), 2);
    assert_eq!(t.dir_count(), 2);
    assert!(!t.has_dir(&oid(500)));
}

#[test]
fn churn_keeps_the_tree_at_its_size() {
    const N: u32 = 20_000;
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    for i in 1..=N {
        t.insert(&r, format!("f{i:07}").as_bytes(), file(i))
            .unwrap();
    }
    let settled = t.heap_bytes();
    // Renames to longer names and back: each leaves its old bytes behind.
    for round in 0..10 {
        for i in 1..=N {
            let (from, to) = (format!("f{i:07}"), format!("a longer name {i:07}"));
            let (from, to) = if round % 2 == 0 {
                (from, to)
            } else {
                (to, from)
            };
            t.rename(&r, from.as_bytes(), &r, to.as_bytes()).unwrap();
        }
    }
    // Creations and removals: all but a few go, then as many come back.
    for _ in 0..5 {
        for i in 10..=N {
            t.remove(&r, format!("f{i:07}").as_bytes());
        }
        for i in 10..=N {
            t.insert(&r, format!("f{i:07}").as_bytes(), file(i))
                .unwrap();
        }
    }
    let (len, garbage) = t.store.arena_use();
    assert!(garbage * 2 <= len.max(2 * LIMITS.garbage));
    assert!(
        t.heap_bytes() <= 2 * settled,
        "{} bytes, {settled} after the creations",
        t.heap_bytes()
    );
    // Nearly all removed: the tree is rebuilt smaller.
    for i in 10..=N {
        t.remove(&r, format!("f{i:07}").as_bytes());
    }
    assert_eq!(t.len(), 9);
    assert!(
        t.heap_bytes() < settled / 4,
        "{} of {settled}",
        t.heap_bytes()
    );
    assert_eq!(t.lookup(&r, b"f0000009"), Some(file(9)));
}

#[test]
fn heap_bytes_counts_what_entries_take() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    let empty = t.heap_bytes();
    for d in 1..=1000 {
        t.insert(&r, format!("d{d:07}").as_bytes(), dir(d)).unwrap();
        for f in 0..10 {
            let n = 10_000 + d * 10 + f;
            t.insert(&oid(d), format!("f{n:07}").as_bytes(), file(n))
                .unwrap();
        }
    }
    let per_entry = (t.heap_bytes() - empty) as f64 / t.len() as f64;
    // 20 bytes of node, 12 of name and handle (oid's are 4), and the
    // tables' share: well under the old layout's 250.
    assert!((30.0..80.0).contains(&per_entry), "{per_entry} bytes");
}

/// A directory that outgrows its list has its children put in the name
/// table, and they stay findable through it as it grows, loses entries to
/// renames and removals, shrinks below the list's size and goes whole.
#[test]
fn a_directory_past_its_list_is_searched_through_the_name_table() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    let mut m = reference::Reference::new(r.clone());
    let n = 3 * index::LIST_MAX;
    let name = |i: u32| format!("entry {i}").into_bytes();
    for (p, d) in [(&r, 1), (&r, 2)] {
        t.insert(p, format!("d{d}").as_bytes(), dir(d)).unwrap();
        m.insert(p, format!("d{d}").as_bytes(), dir(d)).unwrap();
    }
    let hashed = |t: &Tree, d: u32| t.store.dir(t.dir(&oid(d)).unwrap()).hashed();
    for i in 0..n {
        let e = if i % 5 == 0 {
            dir(100 + i)
        } else {
            file(100 + i)
        };
        t.insert(&oid(1), &name(i), e.clone()).unwrap();
        m.insert(&oid(1), &name(i), e).unwrap();
        assert_eq!(hashed(&t, 1), i >= index::LIST_MAX, "after {i}");
    }
    assert!(!hashed(&t, 2));
    let agree = |t: &Tree, m: &reference::Reference| {
        assert_eq!(t.listing(), m.listing());
        for d in [1, 2] {
            for i in 0..n + 1 {
                assert_eq!(
                    t.lookup(&oid(d), &name(i)),
                    m.lookup(&oid(d), &name(i)).cloned()
                );
            }
        }
    };
    agree(&t, &m);
    // Half of them move out to the small directory (which outgrows its
    // list in turn) and a quarter of those back, under other names.
    for i in (0..n).step_by(2) {
        let (a, b) = (name(i), format!("moved {i}").into_bytes());
        assert_eq!(
            t.rename(&oid(1), &a, &oid(2), &b),
            m.rename(&oid(1), &a, &oid(2), &b)
        );
    }
    for i in (0..n).step_by(8) {
        let (a, b) = (format!("moved {i}").into_bytes(), name(n + i));
        assert_eq!(
            t.rename(&oid(2), &a, &oid(1), &b),
            m.rename(&oid(2), &a, &oid(1), &b)
        );
    }
    assert!(hashed(&t, 2));
    agree(&t, &m);
    // Nearly all go: the directory stays hashed, and still answers.
    for i in 1..n {
        assert_eq!(t.remove(&oid(1), &name(i)), m.remove(&oid(1), &name(i)));
    }
    assert!(hashed(&t, 1));
    agree(&t, &m);
    assert_eq!(t.remove(&r, b"d1"), m.remove(&r, b"d1"));
    assert_eq!(t.remove(&r, b"d2"), m.remove(&r, b"d2"));
    assert!(t.is_empty());
    agree(&t, &m);
}

mod model;
mod reference;
mod touched;

fn on_fs(fsid: u32, handle: &[u8]) -> ObjectId {
    ObjectId::from_handle([fsid, 7], &FileHandle::new(1, handle).unwrap())
}

#[test]
fn ids_of_many_filesystems_and_long_handles_are_told_apart() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    // Past the classes searched one by one, and handles that do not fit
    // in a node (btrfs's 20 bytes, the largest the kernel gives).
    let long = [0xa5u8; weir_sys::fanotify::fid::MAX_HANDLE_SZ];
    let ids: Vec<ObjectId> = (0..10)
        .flat_map(|fs| {
            [
                on_fs(fs, b"12345678"),
                on_fs(fs, &[fs as u8; 20]),
                on_fs(fs, &long),
            ]
        })
        .collect();
    for (i, id) in ids.iter().enumerate() {
        let kind = if i % 2 == 0 { Kind::Dir } else { Kind::File };
        let e = Entry {
            id: id.clone(),
            kind,
        };
        t.insert(&r, format!("e{i}").as_bytes(), e).unwrap();
    }
    for (i, id) in ids.iter().enumerate() {
        let got = t.lookup(&r, format!("e{i}").as_bytes()).unwrap();
        assert_eq!(&got.id, id);
        assert_eq!(t.has_dir(id), i % 2 == 0);
        assert_eq!(t.links(id), u32::from(i % 2 == 1));
    }
    assert!(!t.contains(&on_fs(99, b"12345678")));
    for i in 0..ids.len() {
        t.remove(&r, format!("e{i}").as_bytes()).unwrap();
    }
    assert!(t.is_empty());
}

#[test]
fn a_tree_full_of_id_prefixes_refuses_one_more_and_stays_as_it_was() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    // The root's prefix is one of the 65,535.
    for fs in 0..65_534u32 {
        let e = Entry {
            id: on_fs(fs + 1000, b"h"),
            kind: Kind::File,
        };
        t.insert(&r, format!("{fs}").as_bytes(), e).unwrap();
    }
    let e = Entry {
        id: on_fs(u32::MAX, b"h"),
        kind: Kind::File,
    };
    assert_eq!(t.insert(&r, b"0", e), Err(TreeError::Full));
    assert_eq!(t.len(), 65_534);
    assert_eq!(t.lookup(&r, b"0").map(|e| e.id), Some(on_fs(1000, b"h")));
}

/// Room made up front (a load from the copy) changes nothing the tree
/// holds, and loading within it allocates nothing more.
#[test]
fn a_tree_loaded_into_reserved_room_is_the_same_and_never_grows() {
    // No more directories and entries in each than a list holds: how
    // many names the name table will hold is not known ahead.
    const DIRS: u32 = index::LIST_MAX;
    let r = oid(0);
    let load = |t: &mut Tree| {
        for d in 1..=DIRS {
            t.insert(&r, format!("d{d}").as_bytes(), dir(d)).unwrap();
            for f in 0..index::LIST_MAX {
                let n = 1000 + d * 100 + f;
                t.insert(&oid(d), format!("f{f}").as_bytes(), file(n))
                    .unwrap();
            }
        }
    };
    let mut plain = Tree::new(r.clone());
    load(&mut plain);
    let mut reserved = Tree::new(r.clone());
    reserved.reserve(DIRS as usize + 1, (DIRS * index::LIST_MAX) as usize);
    let before = reserved.heap_bytes();
    load(&mut reserved);
    assert_eq!(reserved.heap_bytes(), before, "grew while loading");
    assert_eq!(reserved.len(), plain.len());
    let mut p = Vec::new();
    for d in 1..=DIRS {
        let a: Vec<_> = plain
            .entries_of(&oid(d))
            .map(|(n, e)| (n.to_vec(), e))
            .collect();
        let b: Vec<_> = reserved
            .entries_of(&oid(d))
            .map(|(n, e)| (n.to_vec(), e))
            .collect();
        assert_eq!(a.len(), index::LIST_MAX as usize);
        assert_eq!(
            a.iter().collect::<std::collections::HashSet<_>>(),
            b.iter().collect()
        );
        p.clear();
        assert!(reserved.dir_path(&oid(d), &mut p));
        assert_eq!(p, format!("d{d}").as_bytes());
    }
}
