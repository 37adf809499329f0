//! A copy kept from the tree's touches (the images of touched directories,
//! and the removed ones dropped) is the tree, whatever the changes and
//! however the takes fall between them.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::model::{apply, op};
use super::reference::Reference;
use super::*;

/// A persistent copy, as a checkpoint would keep it: one image per
/// directory.
#[derive(Default)]
struct Copy {
    dirs: BTreeMap<ObjectId, DirImage>,
}

impl Copy {
    fn take(&mut self, t: &mut Tree, max_entries: usize) {
        for id in t.take_removed() {
            self.dirs.remove(&id);
        }
        let mut images = Vec::new();
        t.take_touched(max_entries, &mut images);
        for mut i in images {
            i.entries.sort_by(|a, b| a.0.cmp(&b.0));
            self.dirs.insert(i.id.clone(), i);
        }
    }
}

/// Every directory of the tree, the root first.
fn dirs(t: &Tree) -> Vec<ObjectId> {
    let mut out = vec![t.root().clone()];
    out.extend(
        t.links_top_down()
            .into_iter()
            .filter(|(_, _, e, _)| e.kind.is_dir())
            .map(|(_, _, e, _)| e.id),
    );
    out
}

fn same(t: &Tree, c: &Copy) -> Result<(), TestCaseError> {
    let want = dirs(t);
    let have: Vec<&ObjectId> = c.dirs.keys().collect();
    let mut sorted: Vec<&ObjectId> = want.iter().collect();
    sorted.sort();
    prop_assert_eq!(have, sorted, "the copy's directories");
    for id in &want {
        let Some(d) = t.dir(id) else {
            return Err(TestCaseError::fail("a listed directory is not in the tree"));
        };
        let mut live = t.image(d);
        live.entries.sort_by(|a, b| a.0.cmp(&b.0));
        prop_assert_eq!(&c.dirs[id], &live);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_copy_kept_from_the_touches_is_the_tree(
        ops in proptest::collection::vec((op(), proptest::option::of(0usize..4)), 0..80),
        rebuilds in any::<bool>(),
        track_late in any::<bool>(),
    ) {
        let limits = Limits {
            garbage: 0,
            slots: if rebuilds { 0 } else { usize::MAX },
            list_max: 2,
        };
        let mut t = Tree::with_limits(oid(0), limits);
        let mut m = Reference::new(oid(0));
        let mut copy = Copy::default();
        let half = ops.len() / 2;
        if !track_late {
            t.track_touches(true);
        }
        for (i, (o, take)) in ops.iter().enumerate() {
            if track_late && i == half {
                // Tracking from a tree that already holds entries: the
                // first take is all of it.
                t.track_touches(true);
            }
            apply(&mut t, &mut m, o)?;
            if let (Some(n), true) = (take, t.touched.is_some()) {
                copy.take(&mut t, *n);
            }
        }
        if track_late && ops.len() <= half {
            t.track_touches(true);
        }
        while t.touched_dirs() > 0 {
            copy.take(&mut t, 3);
        }
        copy.take(&mut t, 3);
        same(&t, &copy)?;
        // Nothing is left to take.
        prop_assert_eq!(t.touched_dirs(), 0);
        prop_assert!(t.take_removed().is_empty());
    }
}

/// Untouched directories are not taken again.
#[test]
fn only_touched_directories_are_taken() {
    let mut t = Tree::new(oid(0));
    let dir = |i| Entry {
        id: oid(i),
        kind: Kind::Dir,
    };
    let file = |i| Entry {
        id: oid(i),
        kind: Kind::File,
    };
    t.insert(&oid(0), b"a", dir(1)).unwrap();
    t.insert(&oid(0), b"b", dir(2)).unwrap();
    t.insert(&oid(1), b"f", file(3)).unwrap();
    t.track_touches(true);
    assert_eq!(t.touched_dirs(), 3);
    let mut out = Vec::new();
    assert_eq!(t.take_touched(usize::MAX, &mut out), 3);
    assert_eq!(t.touched_dirs(), 0);
    // A file created in b: b alone.
    t.insert(&oid(2), b"g", file(4)).unwrap();
    out.clear();
    t.take_touched(usize::MAX, &mut out);
    assert_eq!(out.iter().map(|i| &i.id).collect::<Vec<_>>(), [&oid(2)]);
    // a moved into b: a (its location), the root and b (their entries).
    t.rename(&oid(0), b"a", &oid(2), b"a").unwrap();
    out.clear();
    t.take_touched(usize::MAX, &mut out);
    let mut ids: Vec<_> = out.iter().map(|i| i.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, [oid(0), oid(1), oid(2)]);
    // b removed with a below it: both are reported removed.
    t.remove(&oid(0), b"b").unwrap();
    let mut gone = t.take_removed();
    gone.sort();
    assert_eq!(gone, [oid(1), oid(2)]);
    out.clear();
    t.take_touched(usize::MAX, &mut out);
    assert_eq!(out.iter().map(|i| &i.id).collect::<Vec<_>>(), [&oid(0)]);
}

/// A rebuild (three quarters of the slots free) renumbers the slots: the
/// touches are carried over by id, so nothing is lost or taken twice.
#[test]
fn touches_outlive_a_rebuild() {
    let limits = Limits {
        garbage: 0,
        slots: 0,
        ..LIMITS
    };
    let mut t = Tree::with_limits(oid(0), limits);
    let mut copy = Copy::default();
    t.track_touches(true);
    for i in 1..=16 {
        let e = Entry {
            id: oid(i),
            kind: Kind::Dir,
        };
        t.insert(&oid(0), format!("d{i}").as_bytes(), e).unwrap();
    }
    copy.take(&mut t, usize::MAX);
    // d16 touched (a file in it), then most of the slots freed: a rebuild.
    let f = Entry {
        id: oid(17),
        kind: Kind::File,
    };
    t.insert(&oid(16), b"f", f).unwrap();
    for i in 1..=14 {
        t.remove(&oid(0), format!("d{i}").as_bytes()).unwrap();
    }
    // Rebuilt: the slots of fourteen directories are gone.
    let (live, slots) = t.store.occupancy();
    assert!(slots < 16, "not rebuilt: {live} live of {slots} slots");
    assert_eq!(t.touched_dirs(), 2, "the root and d16");
    copy.take(&mut t, usize::MAX);
    same(&t, &copy).unwrap();
}

/// A directory a take found without times (a change forgot them) is
/// counted as touched again by `touch_untimed`, until a take finds it with
/// times; through a rebuild too, and a removed one is forgotten.
#[test]
fn directories_taken_without_times_are_touched_again_for_a_stop() {
    let limits = Limits {
        garbage: 0,
        slots: 0,
        ..LIMITS
    };
    let mut t = Tree::with_limits(oid(0), limits);
    let dir = |i| Entry {
        id: oid(i),
        kind: Kind::Dir,
    };
    for i in 1..=32 {
        t.insert(&oid(0), format!("d{i}").as_bytes(), dir(i))
            .unwrap();
    }
    let times = DirTimes {
        mtime: (1, 0),
        ctime: (1, 0),
    };
    for i in 0..=32 {
        assert!(t.set_dir_times(&oid(i), times));
    }
    // As from a copy that holds d1 and d2 without times.
    let gone = |t: &mut Tree, i: u32| {
        t.times.take(t.dir(&oid(i)).unwrap());
    };
    gone(&mut t, 1);
    gone(&mut t, 2);
    t.track_touches(false);
    let mut copy = Copy::default();
    assert_eq!(t.touch_untimed(), 2);
    let mut touched = t.touched_ids();
    touched.sort();
    assert_eq!(touched, [oid(1), oid(2)]);
    // Taken with times (a stop's): no longer untimed.
    assert!(t.set_dir_times(&oid(1), times));
    assert!(t.set_dir_times(&oid(2), times));
    copy.take(&mut t, usize::MAX);
    assert_eq!(t.touch_untimed(), 0);
    // A change forgets d3's times; a checkpoint takes it without them.
    let f = Entry {
        id: oid(100),
        kind: Kind::File,
    };
    t.insert(&oid(3), b"f", f).unwrap();
    copy.take(&mut t, usize::MAX);
    assert_eq!(t.touched_dirs(), 0);
    // d4 taken without times too, then removed: forgotten.
    t.touch_dir(&oid(4));
    copy.take(&mut t, usize::MAX);
    t.remove(&oid(0), b"d4").unwrap();
    copy.take(&mut t, usize::MAX);
    // Most slots freed: a rebuild carries d3 over by id.
    for i in 5..=32 {
        t.remove(&oid(0), format!("d{i}").as_bytes()).unwrap();
    }
    let (live, slots) = t.store.occupancy();
    assert!(slots < 32, "not rebuilt: {live} live of {slots} slots");
    copy.take(&mut t, usize::MAX);
    // The root was taken without times as well (its entries changed).
    assert_eq!(t.touch_untimed(), 2);
    let mut touched = t.touched_ids();
    touched.sort();
    assert_eq!(touched, [oid(0), oid(3)]);
}
