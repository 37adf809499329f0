//! A writer killed (SIGKILL) at random moments: the index reopens at a
//! committed batch, whole, and never claims to cover more than it holds.
//!
//! The child is this test binary again, run with `CHILD` set: it commits
//! batch after batch, batch `n` adding 40 entries tagged `n`, removing
//! those of batch `n - 3` and setting the covered index to `n`, so the
//! index at covered index `c` must hold exactly batches `c - 2 ..= c`.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use weir_fsindex::{Entry, Index, Kind, Root};

const CHILD: &str = "WEIR_FSINDEX_CRASH_CHILD";
const PER_BATCH: u64 = 40;
const DIR: &[u8] = b"dir";

fn name(batch: u64, i: u64) -> Vec<u8> {
    format!("b{batch}-{i}").into_bytes()
}

fn id(batch: u64, i: u64) -> Vec<u8> {
    // Ids of every length from 8 to 27 bytes, each its batch's.
    let mut id = batch.to_be_bytes().to_vec();
    id.extend(std::iter::repeat_n(i as u8, (i % 20) as usize));
    id
}

fn crash_root(index: &Index) -> Option<Root> {
    index.snapshot().unwrap().root(b"/crash").unwrap()
}

/// The child's loop: never returns while it is not killed.
#[test]
fn child_loop() {
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    let index = Index::open(path).unwrap();
    let root = match crash_root(&index) {
        Some(r) => r,
        None => {
            let mut b = index.batch();
            b.create_root(b"/crash", b"root", b"log").unwrap();
            index.commit(b).unwrap();
            crash_root(&index).unwrap()
        }
    };
    for n in root.covered + 1.. {
        let mut b = index.batch();
        for i in 0..PER_BATCH {
            let e = Entry {
                id: id(n, i),
                kind: Kind::File,
                attrs: None,
            };
            b.put_entry(root.no, DIR, &name(n, i), &e).unwrap();
            if n > 3 {
                b.remove_entry(root.no, DIR, &name(n - 3, i)).unwrap();
            }
        }
        b.set_covered(root.no, n);
        index.commit(b).unwrap();
    }
}

/// What the index must hold at covered index `c`.
fn expected(c: u64) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    (c.saturating_sub(2).max(1)..=c)
        .filter(|&n| c > 0 && n > 0)
        .flat_map(|n| (0..PER_BATCH).map(move |i| (name(n, i), id(n, i))))
        .collect()
}

#[test]
fn killed_writer_leaves_a_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let exe = std::env::current_exe().unwrap();
    let mut seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    let mut last = 0;
    for round in 0..24 {
        let mut child = Command::new(&exe)
            .args(["--exact", "child_loop", "--nocapture", "--test-threads=1"])
            .env(CHILD, &path)
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // The first rounds are killed early, most often while the child
        // starts or creates the file: a creation is atomic too.
        let early = if round < 4 {
            seed % 10
        } else {
            20 + seed % 200
        };
        std::thread::sleep(Duration::from_millis(early));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert!(
            !status.success(),
            "round {round}: the child ended by itself: {status}"
        );
        let index = Index::open(&path).unwrap();
        let Some(root) = crash_root(&index) else {
            assert_eq!(last, 0, "round {round}: the root is gone");
            continue;
        };
        let c = root.covered;
        assert!(
            c >= last,
            "round {round}: covered went back from {last} to {c}"
        );
        last = c;
        let snap = index.snapshot().unwrap();
        let got: BTreeSet<_> = snap
            .entries(root.no)
            .unwrap()
            .map(|r| r.unwrap())
            .map(|r| (r.name, r.entry.id))
            .collect();
        assert_eq!(got, expected(c), "round {round}: covered {c}");
        assert_eq!(root.entries, got.len() as u64, "round {round}: count");
        for n in c.saturating_sub(2).max(1)..=c {
            let e = snap.entry(root.no, DIR, &name(n, 7)).unwrap();
            assert_eq!(e.map(|e| e.id), Some(id(n, 7)), "round {round}: batch {n}");
        }
        eprintln!("round {round}: killed at covered index {c}");
    }
    assert!(last > 0, "no batch was ever committed");
}
