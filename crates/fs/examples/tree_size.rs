//! What a big tree costs: builds the synthetic tree of the start benchmark
//! (100,000 directories of 10 files each, 8-byte names, ext4-style 8-byte
//! handles) and prints its bytes per entry, by the process's resident set
//! and by `Tree::heap_bytes`, and the time of a lookup, a link count and a
//! directory check on it, in random order.
//!
//! `cargo run --release -p weir-fs --example tree_size [DIRS]`

use std::hint::black_box;
use std::time::Instant;

use weir_fs::{Entry, Kind, ObjectId, Tree};
use weir_sys::fanotify::fid::FileHandle;

/// Files in each directory.
const FILES: u32 = 10;

fn oid(n: u32) -> ObjectId {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&n.to_le_bytes());
    h[4..].copy_from_slice(&0x5eed_u32.wrapping_mul(n | 1).to_le_bytes());
    ObjectId::from_handle([0x1234_5678, 0x9abc_def0], &FileHandle::new(1, &h).unwrap())
}

fn name(prefix: u8, n: u32) -> Vec<u8> {
    format!("{}{n:07}", char::from(prefix)).into_bytes()
}

/// The resident set, from `/proc/self/statm`.
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split(' ').nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// A small deterministic generator, so runs compare.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % u64::from(n)) as u32
    }
}

fn main() {
    let dirs: u32 = std::env::args()
        .nth(1)
        .map_or(100_000, |s| s.parse().unwrap());
    // Object 0 is the root, 1..=dirs the directories (dir k below dir
    // (k - 1) / 10, a tree ten wide), then the files.
    let before = rss();
    let t0 = Instant::now();
    let mut tree = Tree::new(oid(0));
    for k in 1..=dirs {
        let e = Entry {
            id: oid(k),
            kind: Kind::Dir,
        };
        tree.insert(&oid((k - 1) / 10), &name(b'd', k), e).unwrap();
    }
    let mut next = dirs + 1;
    for k in 1..=dirs {
        for _ in 0..FILES {
            let e = Entry {
                id: oid(next),
                kind: Kind::File,
            };
            tree.insert(&oid(k), &name(b'f', next), e).unwrap();
            next += 1;
        }
    }
    let built = t0.elapsed();
    let after = rss();
    let n = tree.len() as f64;
    println!(
        "{} entries ({} directories) built in {:.2} s",
        tree.len(),
        tree.dir_count(),
        built.as_secs_f64()
    );
    println!(
        "RSS grew {:.1} MiB: {:.1} bytes/entry",
        (after - before) as f64 / 1048576.0,
        (after - before) as f64 / n
    );
    print_heap(&tree, n);

    // Lookups in random order: each a miss in the caches on a big tree.
    let rounds = 2_000_000u32;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let probes: Vec<(ObjectId, Vec<u8>, ObjectId)> = (0..rounds)
        .map(|_| {
            let f = dirs + 1 + rng.below(dirs * FILES);
            let d = (f - dirs - 1) / FILES + 1;
            (oid(d), name(b'f', f), oid(f))
        })
        .collect();
    let t = Instant::now();
    let mut hits = 0u32;
    for (d, nm, _) in &probes {
        hits += u32::from(black_box(tree.lookup(d, nm)).is_some());
    }
    let lookup = t.elapsed().as_nanos() as f64 / f64::from(rounds);
    let t = Instant::now();
    for (_, _, f) in &probes {
        hits += black_box(tree.links(f));
    }
    let links = t.elapsed().as_nanos() as f64 / f64::from(rounds);
    let t = Instant::now();
    for (d, _, _) in &probes {
        hits += u32::from(black_box(tree.has_dir(d)));
    }
    let has_dir = t.elapsed().as_nanos() as f64 / f64::from(rounds);
    assert_eq!(hits, 3 * rounds);
    println!("lookup {lookup:.0} ns, links {links:.0} ns, has_dir {has_dir:.0} ns (random order)");

    // As events come: a directory's names one after the other, and names
    // not there (a creation's first look).
    let dirs_probed: Vec<u32> = (0..rounds / FILES).map(|_| 1 + rng.below(dirs)).collect();
    let t = Instant::now();
    for &d in &dirs_probed {
        let id = oid(d);
        for f in 0..FILES {
            let n = name(b'f', dirs + 1 + (d - 1) * FILES + f);
            hits += u32::from(black_box(tree.lookup(&id, &n)).is_some());
        }
    }
    let clustered = t.elapsed().as_nanos() as f64 / f64::from(rounds);
    let t = Instant::now();
    for (d, _, _) in &probes {
        hits += u32::from(black_box(tree.lookup(d, b"absent00")).is_some());
    }
    let absent = t.elapsed().as_nanos() as f64 / f64::from(rounds);
    assert_eq!(hits, 4 * rounds);
    println!(
        "lookup {clustered:.0} ns a directory at a time (name formatting included), {absent:.0} ns of an absent name"
    );
}

fn print_heap(tree: &Tree, n: f64) {
    let b = tree.heap_bytes();
    println!(
        "heap_bytes {:.1} MiB: {:.1} bytes/entry",
        b as f64 / 1048576.0,
        b as f64 / n
    );
}
