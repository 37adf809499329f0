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
    assert_eq!(t.lookup(&r, b"g"), Some(&file(3)));
}

#[test]
fn an_exchange_swaps_a_file_and_a_directory() {
    let r = oid(0);
    let mut t = Tree::new(r.clone());
    t.insert(&r, b"a", dir(1)).unwrap();
    t.insert(&oid(1), b"in", file(2)).unwrap();
    t.insert(&r, b"b", file(3)).unwrap();
    t.exchange((&r, b"a"), (&r, b"b")).unwrap();
    assert_eq!(t.lookup(&r, b"a"), Some(&file(3)));
    assert_eq!(t.lookup(&r, b"b"), Some(&dir(1)));
    assert_eq!(path(&t, 1, b"in"), b"b/in");
    assert_eq!(
        t.exchange((&r, b"b"), (&oid(1), b"in")),
        Err(TreeError::IntoItself)
    );
}
