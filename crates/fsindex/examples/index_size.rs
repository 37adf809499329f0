//! The index's figures on a large tree, through its public API: 1M files
//! in 100k directories (10 each, the directories a 10-ary tree), plus one
//! directory of 200k entries; ids of 8 to 28 bytes, names of 8 or 9, every
//! entry with attributes.
//!
//! Prints bytes on disk per entry after the first build and after
//! `compact()`, beside the floor (the encoded bytes of the entries alone);
//! CPU µs per record (user + system of the process) for 1M mixed records
//! (creates, unlinks, renames across directories, each in random
//! directories, each invalidating its directories' times) in commits of
//! 1,000, 10,000 and 100,000 records; and the time to load the whole root.
//! Ends with one JSON line. Run with `cargo run --release -p weir-fsindex
//! --example index_size [DIR]`.

use std::path::Path;
use std::time::Instant;

use weir_fsindex::{Attrs, Dir, Entry, Index, Kind, RootNo, Timestamp};

/// A deterministic generator (splitmix64): the same tree every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn id(&mut self) -> Vec<u8> {
        let len = 8 + self.below(21);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

const DIRS: usize = 100_000;
const PER_DIR: usize = 10;
const BIG: usize = 200_000;
const T: Timestamp = Timestamp {
    sec: 1_700_000_000,
    nsec: 5,
};

fn file(id: Vec<u8>, size: u64) -> Entry {
    Entry {
        id,
        kind: Kind::File,
        attrs: Some(Attrs {
            size,
            mtime: T,
            ctime: T,
            nlink: 1,
        }),
    }
}

/// The tree as the benchmark keeps it: each directory's id and its files'
/// names (counters), so records can pick real entries.
struct Tree {
    dirs: Vec<Vec<u8>>,
    files: Vec<Vec<u64>>,
    next_name: u64,
}

fn name(n: u64) -> Vec<u8> {
    format!("f{n:07}").into_bytes()
}

/// The process's CPU time (user + system, every thread), in µs.
fn cpu_us() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let rest = &stat[stat.rfind(')').expect("stat") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime");
    ticks * 10_000
}

fn build(index: &Index, rng: &mut Rng) -> (RootNo, Tree, u64, u64) {
    let mut dirs: Vec<Vec<u8>> = (0..=DIRS).map(|_| rng.id()).collect();
    let mut build = index
        .replace_root(b"/bench", &dirs[0], b"log", 100_000)
        .expect("build");
    let mut floor = 0u64;
    let mut entries = 0u64;
    let mut put = |b: &mut weir_fsindex::Build<'_>, parent: &[u8], name: &[u8], e: &Entry| {
        floor += (1 + name.len() + 1 + e.id.len() + 1 + 36 * e.attrs.is_some() as usize) as u64;
        entries += 1;
        b.put_entry(parent, name, e).expect("put");
    };
    let mut files = vec![Vec::new(); DIRS + 2];
    let mut next_name = 0;
    for d in 0..=DIRS {
        let parent = (d > 0).then(|| dirs[(d - 1) / PER_DIR].clone());
        let dname = format!("d{d:07}").into_bytes();
        let desc = Dir {
            parent: parent.clone(),
            name: if d > 0 { dname.clone() } else { Vec::new() },
            mtime: T,
            ctime: T,
            times_valid: true,
        };
        build.put_dir(&dirs[d], &desc).expect("dir");
        if let Some(p) = &parent {
            let e = Entry {
                id: dirs[d].clone(),
                kind: Kind::Dir,
                attrs: None,
            };
            put(&mut build, p, &dname, &e);
        }
        // The root directory holds only directories.
        let count = if d == 0 { 0 } else { PER_DIR };
        for _ in 0..count {
            put(
                &mut build,
                &dirs[d],
                &name(next_name),
                &file(rng.id(), next_name),
            );
            files[d].push(next_name);
            next_name += 1;
        }
    }
    // The big directory, in the root.
    let big = rng.id();
    let root_id = dirs[0].clone();
    let e = Entry {
        id: big.clone(),
        kind: Kind::Dir,
        attrs: None,
    };
    put(&mut build, &root_id, b"big", &e);
    let desc = Dir {
        parent: Some(root_id.clone()),
        name: b"big".to_vec(),
        mtime: T,
        ctime: T,
        times_valid: true,
    };
    build.put_dir(&big, &desc).expect("dir");
    for _ in 0..BIG {
        put(&mut build, &big, &name(next_name), &file(rng.id(), 1));
        files[DIRS + 1].push(next_name);
        next_name += 1;
    }
    dirs.push(big);
    let root = build.finish(1).expect("finish");
    let tree = Tree {
        dirs,
        files,
        next_name,
    };
    (root, tree, floor, entries)
}

/// Commits `records` mixed records in batches of `batch`; returns CPU µs
/// and wall seconds.
fn stream(index: &Index, root: RootNo, tree: &mut Tree, rng: &mut Rng, batch: usize) -> (f64, f64) {
    const RECORDS: usize = 1_000_000;
    let (c0, t0) = (cpu_us(), Instant::now());
    let mut covered = index
        .snapshot()
        .and_then(|s| s.root_by_no(root))
        .expect("root")
        .expect("root")
        .covered;
    let n = tree.dirs.len();
    for _ in 0..RECORDS / batch {
        let mut b = index.batch();
        for _ in 0..batch {
            let d = rng.below(n);
            let kind = rng.below(3);
            if kind == 0 || tree.files[d].is_empty() {
                let f = tree.next_name;
                tree.next_name += 1;
                b.put_entry(root, &tree.dirs[d], &name(f), &file(rng.id(), f))
                    .expect("put");
                tree.files[d].push(f);
            } else {
                let i = rng.below(tree.files[d].len());
                let f = tree.files[d].swap_remove(i);
                b.remove_entry(root, &tree.dirs[d], &name(f))
                    .expect("remove");
                if kind == 2 {
                    // A rename into another random directory, same id.
                    let to = rng.below(n);
                    b.put_entry(root, &tree.dirs[to], &name(f), &file(rng.id(), f))
                        .expect("put");
                    b.invalidate_dir_times(root, &tree.dirs[to]).expect("times");
                    tree.files[to].push(f);
                }
            }
            b.invalidate_dir_times(root, &tree.dirs[d]).expect("times");
        }
        covered += batch as u64;
        b.set_covered(root, covered);
        index.commit(b).expect("commit");
    }
    (
        (cpu_us() - c0) as f64 / RECORDS as f64,
        t0.elapsed().as_secs_f64(),
    )
}

fn file_len(p: &Path) -> u64 {
    p.metadata().map(|m| m.len()).unwrap_or(0)
}

fn main() {
    let dir = std::env::args().nth(1).map(std::path::PathBuf::from);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("index.redb");
    let _ = std::fs::remove_file(&path);
    let mut index = Index::open(&path).expect("open");
    let mut rng = Rng(42);

    let (c0, t0) = (cpu_us(), Instant::now());
    let (root, mut tree, floor, entries) = build(&index, &mut rng);
    let build_cpu = (cpu_us() - c0) as f64 / entries as f64;
    let build_wall = t0.elapsed().as_secs_f64();
    let built = file_len(&path) as f64 / entries as f64;
    let space = index.space().expect("space");
    index.compact().expect("compact");
    let compacted = file_len(&path) as f64 / entries as f64;
    let floor = floor as f64 / entries as f64;
    println!(
        "{entries} entries, {} directories: build {build_cpu:.2} µs CPU/entry ({build_wall:.1} s wall)",
        tree.dirs.len()
    );
    println!(
        "bytes/entry: {built:.1} built (redb says {:.1} used), {compacted:.1} compacted, floor {floor:.1}",
        space.used_bytes as f64 / entries as f64
    );

    let mut runs = Vec::new();
    for batch in [1_000, 10_000, 100_000] {
        let (cpu, wall) = stream(&index, root, &mut tree, &mut rng, batch);
        println!("1M records in commits of {batch:>6}: {cpu:.2} µs CPU/record, {wall:.1} s wall");
        runs.push(format!(
            "{{\"batch\":{batch},\"cpu_us_per_record\":{cpu:.3},\"wall_s\":{wall:.2}}}"
        ));
    }
    let after = file_len(&path) as f64 / entries as f64;
    println!("bytes/entry after the streams: {after:.1}");

    drop(index);
    let index = Index::open(&path).expect("reopen");
    let snap = index.snapshot().expect("snapshot");
    let t0 = Instant::now();
    let (mut loaded, mut bytes) = (0u64, 0usize);
    snap.for_each_entry(root, |e| {
        loaded += 1;
        bytes += e.name.len() + e.id.len();
    })
    .expect("load");
    let dirs = snap.dirs(root).expect("dirs").count();
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let owned = snap.entries(root).expect("entries").count();
    let owned_ms = t0.elapsed().as_secs_f64() * 1e3;
    println!(
        "load: {loaded} entries ({bytes} bytes of names and ids) and {dirs} directories in {load_ms:.0} ms lent, {owned} owned in {owned_ms:.0} ms"
    );
    println!(
        "{{\"bench\":\"fsindex_index_size\",\"entries\":{entries},\"bytes_per_entry_built\":{built:.1},\"bytes_per_entry_compacted\":{compacted:.1},\"bytes_per_entry_floor\":{floor:.1},\"bytes_per_entry_after_streams\":{after:.1},\"build_cpu_us_per_entry\":{build_cpu:.3},\"streams\":[{}],\"load_ms\":{load_ms:.1},\"load_owned_ms\":{owned_ms:.1},\"loaded\":{loaded}}}",
        runs.join(",")
    );
}
