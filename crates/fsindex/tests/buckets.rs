//! The bucket layout against a model: a directory growing through several
//! doublings of its buckets and shrinking back, and batches that edit one
//! bucket many times (the same name put, removed and put again).

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use weir_fsindex::{Attrs, Entry, Index, Kind, RootNo, Timestamp};

const DIR: &[u8] = b"big";

fn entry(n: u64, attrs: bool) -> Entry {
    Entry {
        id: n.to_le_bytes()[..1 + (n % 8) as usize].to_vec(),
        kind: if n.is_multiple_of(3) {
            Kind::Dir
        } else {
            Kind::File
        },
        attrs: attrs.then_some(Attrs {
            size: n,
            mtime: Timestamp { sec: 1, nsec: 2 },
            ctime: Timestamp::default(),
            nlink: 1,
        }),
    }
}

fn name(n: u64) -> Vec<u8> {
    format!("entry-{n}").into_bytes()
}

/// The buckets the rule gives `entries` entries, coming from `before`
/// buckets (see docs/format.md: more than 256 a bucket grows, fewer than
/// 64 shrinks, to the fewest buckets of at most 256 each).
fn rule(entries: u64, before: u32) -> u32 {
    let n = u64::from(before);
    if entries <= 256 * n && (n == 1 || entries >= 64 * n) {
        return before;
    }
    entries.div_ceil(256).max(1).next_power_of_two() as u32
}

fn check(index: &Index, root: RootNo, model: &BTreeMap<Vec<u8>, Entry>) {
    let snap = index.snapshot().unwrap();
    let all: BTreeMap<_, _> = snap
        .entries(root)
        .unwrap()
        .map(Result::unwrap)
        .map(|r| (r.name, r.entry))
        .collect();
    assert_eq!(&all, model, "entries");
    let children: Vec<_> = snap
        .children(root, DIR)
        .unwrap()
        .map(|r| r.unwrap().name)
        .collect();
    assert!(children.iter().eq(model.keys()), "children by name");
    // A sample of lookups, present and absent.
    for n in (0..20_000).step_by(997) {
        assert_eq!(
            snap.entry(root, DIR, &name(n)).unwrap().as_ref(),
            model.get(&name(n))
        );
    }
    let r = snap.root_by_no(root).unwrap().unwrap();
    assert_eq!(r.entries, model.len() as u64);
}

#[test]
fn a_directory_grows_through_doublings_and_shrinks_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("i");
    let mut index = Index::open(&path).unwrap();
    let mut b = index.batch();
    let root = b.create_root(b"/r", b"root", b"log").unwrap();
    index.commit(b).unwrap();
    let mut model = BTreeMap::new();
    let mut buckets = 1;
    let mut seen = vec![1];
    // Up to 5,000 entries (32 buckets) in batches of growing size, then
    // down to none; every batch also rewrites some entries already there.
    let sizes = [1, 255, 1, 300, 600, 1000, 2843];
    let mut next = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        let mut b = index.batch();
        for _ in 0..size {
            let e = entry(next, next.is_multiple_of(2));
            b.put_entry(root, DIR, &name(next), &e).unwrap();
            model.insert(name(next), e);
            next += 1;
        }
        for n in (0..next).step_by(37) {
            let e = entry(n + 1, true);
            b.put_entry(root, DIR, &name(n), &e).unwrap();
            model.insert(name(n), e);
        }
        index.commit(b).unwrap();
        buckets = rule(model.len() as u64, buckets);
        let got = index.snapshot().unwrap().bucket_count(root, DIR).unwrap();
        assert_eq!(got, buckets, "after batch {i} ({} entries)", model.len());
        seen.push(got);
        check(&index, root, &model);
    }
    assert_eq!(model.len(), 5000);
    assert_eq!(buckets, 32);
    let grown = seen.clone();
    // Shrink in uneven steps: removals (some of names not there) and,
    // once, a reopen.
    let mut left: Vec<u64> = (0..next).collect();
    for step in [700, 1, 2000, 799, 900, 150, 150, 200, 100] {
        let mut b = index.batch();
        for n in left.drain(..step) {
            b.remove_entry(root, DIR, &name(n)).unwrap();
            b.remove_entry(root, DIR, &name(n + 1_000_000)).unwrap();
            model.remove(&name(n));
        }
        index.commit(b).unwrap();
        if step == 799 {
            drop(index);
            index = Index::open(&path).unwrap();
        }
        buckets = rule(model.len() as u64, buckets);
        let got = index.snapshot().unwrap().bucket_count(root, DIR).unwrap();
        // An empty directory never described has no row at all.
        let want = if model.is_empty() { 0 } else { buckets };
        assert_eq!(got, want, "after removing to {}", model.len());
        seen.push(got);
        check(&index, root, &model);
    }
    assert!(model.is_empty());
    assert_eq!(grown, [1, 1, 1, 2, 4, 8, 16, 32]);
    // 4300, 4299, 2299, 1500, 600, 450, 300, 100, 0 entries.
    assert_eq!(seen[grown.len()..], [32, 32, 32, 8, 8, 2, 2, 1, 0]);
    index.compact().unwrap();
}

#[derive(Clone, Debug)]
enum Edit {
    Put(usize, u64),
    Remove(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    // Few names, so each batch edits the same ones again and again.
    prop_oneof![
        3 => (0..12usize, 0..1000u64).prop_map(|(n, v)| Edit::Put(n, v)),
        2 => (0..12usize).prop_map(Edit::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// One directory of one bucket (plus a large one of many): every edit
    /// of a batch lands in the same few buckets, and the last one of each
    /// name is what the commit keeps.
    #[test]
    fn many_edits_to_one_bucket_in_one_batch(
        batches in proptest::collection::vec(proptest::collection::vec(edit(), 1..80), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path().join("i")).unwrap();
        let mut b = index.batch();
        let root = b.create_root(b"/r", b"root", b"log").unwrap();
        // A second directory of 300 entries, two buckets, edited by the
        // same batches: a batch touches several buckets of it too.
        for n in 0..300u64 {
            b.put_entry(root, b"other", &name(n), &entry(n, false)).unwrap();
        }
        index.commit(b).unwrap();
        let mut model: BTreeMap<(Vec<u8>, Vec<u8>), Entry> = (0..300u64)
            .map(|n| ((b"other".to_vec(), name(n)), entry(n, false)))
            .collect();
        for edits in &batches {
            let mut b = index.batch();
            for e in edits {
                match *e {
                    Edit::Put(n, v) => {
                        let en = entry(v, v.is_multiple_of(2));
                        b.put_entry(root, DIR, common::NAMES[n % 6], &en).unwrap();
                        b.put_entry(root, b"other", &name(n as u64), &en).unwrap();
                        model.insert((DIR.to_vec(), common::NAMES[n % 6].to_vec()), en.clone());
                        model.insert((b"other".to_vec(), name(n as u64)), en);
                    }
                    Edit::Remove(n) => {
                        b.remove_entry(root, DIR, common::NAMES[n % 6]).unwrap();
                        b.remove_entry(root, b"other", &name(n as u64)).unwrap();
                        model.remove(&(DIR.to_vec(), common::NAMES[n % 6].to_vec()));
                        model.remove(&(b"other".to_vec(), name(n as u64)));
                    }
                }
            }
            index.commit(b).unwrap();
            let snap = index.snapshot().unwrap();
            let got: BTreeMap<_, _> = snap
                .entries(root)
                .unwrap()
                .map(Result::unwrap)
                .map(|r| ((r.parent, r.name), r.entry))
                .collect();
            prop_assert_eq!(&got, &model);
            prop_assert_eq!(snap.root_by_no(root).unwrap().unwrap().entries, model.len() as u64);
            for n in common::NAMES {
                let got = snap.entry(root, DIR, n).unwrap();
                prop_assert_eq!(got.as_ref(), model.get(&(DIR.to_vec(), n.to_vec())));
            }
        }
    }
}
