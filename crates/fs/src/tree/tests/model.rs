//! The compact tree against the old one, under random sequences of
//! inserts, removals, renames, exchanges and hard links (ids shared by
//! several names, ids that are a directory here and a file there), with
//! its arena compacted and its storage rebuilt as often as they can be,
//! and directories searched through their lists, through the name table,
//! or the one and then the other.

use proptest::prelude::*;

use super::reference::Reference;
use super::*;

/// Ids drawn from a small pool, so that they meet again.
const IDS: u32 = 12;

fn names() -> Vec<Vec<u8>> {
    vec![
        b"a".to_vec(),
        b"b".to_vec(),
        b"c\n".to_vec(),
        b"\xff\xfe".to_vec(),
        b"".to_vec(),
        vec![b'n'; 255],
        // A longer name than the first, so a rename grows it in the arena.
        b"a much longer name".to_vec(),
    ]
}

#[derive(Clone, Debug)]
pub(super) enum Op {
    Insert(u32, usize, u32, Kind),
    Remove(u32, usize),
    Rename(u32, usize, u32, usize),
    Exchange(u32, usize, u32, usize),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Dir),
        3 => Just(Kind::File),
        1 => Just(Kind::Symlink),
        1 => Just(Kind::Unknown),
    ]
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    let id = 0..IDS;
    let name = 0..names().len();
    prop_oneof![
        4 => (id.clone(), name.clone(), 1..IDS, kind()).prop_map(|(p, n, i, k)| Op::Insert(p, n, i, k)),
        2 => (id.clone(), name.clone()).prop_map(|(p, n)| Op::Remove(p, n)),
        2 => (id.clone(), name.clone(), id.clone(), name.clone())
            .prop_map(|(a, b, c, d)| Op::Rename(a, b, c, d)),
        1 => (id.clone(), name.clone(), id, name).prop_map(|(a, b, c, d)| Op::Exchange(a, b, c, d)),
    ]
}

/// Everything the public API tells of both trees agrees.
fn same(t: &Tree, m: &Reference) -> Result<(), TestCaseError> {
    // An empty name makes paths ambiguous (the entries of a directory
    // named "" at the root list under the root's own paths), so which of
    // two entries a path keeps depends on the order of a walk: the listing
    // is compared only without one. The per-directory queries below, and
    // `links_top_down`, compare everything else.
    let ambiguous = m.links_top_down().iter().any(|(_, n, _, _)| n.is_empty());
    if !ambiguous {
        prop_assert_eq!(t.listing(), m.listing());
    }
    prop_assert_eq!(t.len(), m.len());
    prop_assert_eq!(t.is_empty(), m.is_empty());
    prop_assert_eq!(t.root(), m.root());
    prop_assert_eq!(t.dir_count(), m.dir_count());
    prop_assert_eq!(t.links_top_down(), m.links_top_down());
    let ns = names();
    for i in 0..IDS {
        let id = oid(i);
        prop_assert_eq!(t.has_dir(&id), m.has_dir(&id));
        prop_assert_eq!(t.links(&id), m.links(&id));
        prop_assert_eq!(t.contains(&id), m.contains(&id));
        prop_assert_eq!(
            t.location(&id).map(|(p, n)| (p, n.to_vec())),
            m.location(&id).map(|(p, n)| (p.clone(), n.to_vec()))
        );
        let (mut a, mut b) = (Vec::new(), Vec::new());
        prop_assert_eq!(t.dir_path(&id, &mut a), m.dir_path(&id, &mut b));
        prop_assert_eq!(a, b);
        let mut ea: Vec<_> = t.entries_of(&id).map(|(n, e)| (n.to_vec(), e)).collect();
        let mut eb: Vec<_> = m
            .entries_of(&id)
            .map(|(n, e)| (n.to_vec(), e.clone()))
            .collect();
        // Names are unique in a directory.
        ea.sort_by(|x, y| x.0.cmp(&y.0));
        eb.sort_by(|x, y| x.0.cmp(&y.0));
        prop_assert_eq!(ea, eb);
        for j in 0..IDS {
            prop_assert_eq!(t.is_ancestor(&id, &oid(j)), m.is_ancestor(&id, &oid(j)));
        }
        for n in &ns {
            prop_assert_eq!(t.lookup(&id, n), m.lookup(&id, n).cloned());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            prop_assert_eq!(t.entry_path(&id, n, &mut a), m.entry_path(&id, n, &mut b));
            prop_assert_eq!(a, b);
        }
    }
    Ok(())
}

pub(super) fn apply(t: &mut Tree, m: &mut Reference, op: &Op) -> Result<(), TestCaseError> {
    let ns = names();
    match *op {
        Op::Insert(p, n, i, k) => {
            let e = Entry {
                id: oid(i),
                kind: k,
            };
            prop_assert_eq!(
                t.insert(&oid(p), &ns[n], e.clone()),
                m.insert(&oid(p), &ns[n], e)
            );
        }
        Op::Remove(p, n) => {
            prop_assert_eq!(t.remove(&oid(p), &ns[n]), m.remove(&oid(p), &ns[n]));
        }
        Op::Rename(a, b, c, d) => {
            prop_assert_eq!(
                t.rename(&oid(a), &ns[b], &oid(c), &ns[d]),
                m.rename(&oid(a), &ns[b], &oid(c), &ns[d])
            );
        }
        Op::Exchange(a, b, c, d) => {
            prop_assert_eq!(
                t.exchange((&oid(a), &ns[b]), (&oid(c), &ns[d])),
                m.exchange((&oid(a), &ns[b]), (&oid(c), &ns[d]))
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_compact_tree_behaves_as_the_old_one(
        ops in proptest::collection::vec(op(), 0..80),
        rebuilds in any::<bool>(),
        list_max in prop_oneof![Just(0u32), Just(2), Just(index::LIST_MAX)],
    ) {
        // Every bit of garbage compacted at once; and either every free
        // slot rebuilt away or none.
        let limits = Limits {
            garbage: 0,
            slots: if rebuilds { 0 } else { usize::MAX },
            list_max,
        };
        let mut t = Tree::with_limits(oid(0), limits);
        let mut m = Reference::new(oid(0));
        for op in &ops {
            apply(&mut t, &mut m, op)?;
            same(&t, &m)?;
            let (len, garbage) = t.store.arena_use();
            prop_assert!(garbage * 2 <= len, "garbage {garbage} of {len}");
            let (live, slots) = t.store.occupancy();
            prop_assert!(!rebuilds || live * 4 >= slots, "{live} of {slots} slots");
        }
        let c = t.clone();
        same(&c, &m)?;
    }
}
