//! The store choice, measured: the rows of a 1M-entry tree (100k
//! directories) written to redb and to fjall as raw keys and values shaped
//! like the index's, in commits of 1,000 rows, of 100,000 and of all 2.1M, then
//! every entry of the root read back.
//!
//! Prints CPU µs per row and per entry (user + system time of the whole
//! process, so a store's background threads count), bytes on disk per
//! entry, and the load time; ends with one JSON line. fjall's figures
//! count the flush of its memtables, not compactions still running. Run with
//! `cargo run --release -p weir-fsindex --features bench-fjall --example
//! store_choice [DIR]`.

use std::path::Path;
use std::time::Instant;

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

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

const ENTRIES: usize = 1_000_000;
const DIRS: usize = 100_000;

/// One table's row.
struct Row {
    table: u8,
    key: Vec<u8>,
    value: Vec<u8>,
}

fn push_lp(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b.len() as u8);
    out.extend_from_slice(b);
}

/// The rows of the tree, in the order a walk finds them: per entry its
/// entry row and by-id row, per directory its dir row.
fn rows() -> Vec<Row> {
    let mut rng = Rng(42);
    let root = 1u32.to_be_bytes();
    let mut dirs: Vec<Vec<u8>> = vec![rng.bytes(12)];
    let mut rows = Vec::with_capacity(ENTRIES * 2 + DIRS);
    for i in 0..ENTRIES {
        // A walk's order: a directory's entries one after another.
        let parent = dirs[i / (ENTRIES / DIRS)].clone();
        let len = 8 + (rng.next() % 21) as usize;
        let id = rng.bytes(len);
        let name = format!("f{:07}", i).into_bytes();
        let is_dir = i % (ENTRIES / DIRS) == 0;
        let mut ek = root.to_vec();
        push_lp(&mut ek, &parent);
        push_lp(&mut ek, &name);
        let mut ev = vec![1u8, if is_dir { 2 } else { 1 }];
        push_lp(&mut ev, &id);
        ev.extend_from_slice(&[0u8; 8 + 12 + 12 + 4]);
        rows.push(Row {
            table: 0,
            key: ek,
            value: ev,
        });
        let mut bk = root.to_vec();
        push_lp(&mut bk, &id);
        push_lp(&mut bk, &parent);
        push_lp(&mut bk, &name);
        rows.push(Row {
            table: 1,
            key: bk,
            value: Vec::new(),
        });
        if is_dir {
            let mut dk = root.to_vec();
            push_lp(&mut dk, &id);
            let mut dv = vec![1u8, 1];
            push_lp(&mut dv, &parent);
            push_lp(&mut dv, &name);
            dv.extend_from_slice(&[0u8; 24]);
            rows.push(Row {
                table: 2,
                key: dk,
                value: dv,
            });
            dirs.push(id);
        }
    }
    rows
}

/// The process's CPU time (user + system, every thread), in µs.
fn cpu_us() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command's closing parenthesis; utime and stime
    // are the 14th and 15th fields, in clock ticks of 10 ms.
    let rest = &stat[stat.rfind(')').expect("stat") + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime");
    ticks * 10_000
}

fn du(path: &Path) -> u64 {
    if path.is_file() {
        return path.metadata().map(|m| m.len()).unwrap_or(0);
    }
    let mut n = 0;
    for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
        n += du(&e.path());
    }
    n
}

struct Figures {
    store: &'static str,
    batch: usize,
    cpu_us_per_row: f64,
    cpu_us_per_entry: f64,
    wall_s: f64,
    bytes_per_entry: f64,
    load_ms: f64,
    loaded: usize,
}

const TABLES: [redb::TableDefinition<'static, &[u8], &[u8]>; 3] = [
    redb::TableDefinition::new("entries"),
    redb::TableDefinition::new("by_id"),
    redb::TableDefinition::new("dirs"),
];

fn run_redb(dir: &Path, rows: &[Row], batch: usize) -> Figures {
    use redb::ReadableDatabase;
    let path = dir.join(format!("redb-{batch}.redb"));
    let _ = std::fs::remove_file(&path);
    let db = redb::Database::create(&path).expect("create");
    let (c0, t0) = (cpu_us(), Instant::now());
    for chunk in rows.chunks(batch) {
        let chunk = sorted(chunk);
        let tx = db.begin_write().expect("begin");
        {
            let mut t: Vec<_> = TABLES
                .iter()
                .map(|d| tx.open_table(*d).expect("table"))
                .collect();
            for r in &chunk {
                t[r.table as usize]
                    .insert(r.key.as_slice(), r.value.as_slice())
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let (cpu, wall) = (cpu_us() - c0, t0.elapsed().as_secs_f64());
    drop(db);
    let bytes = du(&path);
    let db = redb::Database::open(&path).expect("open");
    let t0 = Instant::now();
    let rtx = db.begin_read().expect("read");
    let t = rtx.open_table(TABLES[0]).expect("table");
    let mut loaded = 0;
    let root = 1u32.to_be_bytes();
    for kv in t.range(root.as_slice()..).expect("range") {
        let (k, v) = kv.expect("row");
        if !k.value().starts_with(&root) {
            break;
        }
        loaded += v.value().len().min(1);
    }
    figures("redb", batch, rows.len(), cpu, wall, bytes, t0, loaded)
}

#[cfg(feature = "bench-fjall")]
fn run_fjall(dir: &Path, rows: &[Row], batch: usize) -> Figures {
    use fjall::{Database, KeyspaceCreateOptions, PersistMode};
    let path = dir.join(format!("fjall-{batch}"));
    let _ = std::fs::remove_dir_all(&path);
    let db = Database::builder(&path).open().expect("open");
    let ks: Vec<_> = ["entries", "by_id", "dirs"]
        .iter()
        .map(|n| {
            db.keyspace(n, KeyspaceCreateOptions::default)
                .expect("keyspace")
        })
        .collect();
    let (c0, t0) = (cpu_us(), Instant::now());
    for chunk in rows.chunks(batch) {
        let chunk = sorted(chunk);
        let mut b = db.batch().durability(Some(PersistMode::SyncAll));
        for r in &chunk {
            b.insert(&ks[r.table as usize], r.key.as_slice(), r.value.as_slice());
        }
        b.commit().expect("commit");
    }
    // The memtables' flush is part of the write's cost (compactions
    // started by it may still run: they are not counted).
    for k in &ks {
        k.rotate_memtable_and_wait().expect("flush");
    }
    let (cpu, wall) = (cpu_us() - c0, t0.elapsed().as_secs_f64());
    drop(ks);
    drop(db);
    let bytes = du(&path);
    let db = Database::builder(&path).open().expect("open");
    let ks = db
        .keyspace("entries", KeyspaceCreateOptions::default)
        .expect("keyspace");
    let t0 = Instant::now();
    let mut loaded = 0;
    for kv in ks.prefix(1u32.to_be_bytes()) {
        let (_, v) = kv.into_inner().expect("row");
        loaded += v.len().min(1);
    }
    figures("fjall", batch, rows.len(), cpu, wall, bytes, t0, loaded)
}

/// A commit's rows in key order, as the index writes them: neighbours
/// land on the same pages.
fn sorted(chunk: &[Row]) -> Vec<&Row> {
    let mut v: Vec<&Row> = chunk.iter().collect();
    v.sort_by(|a, b| (a.table, &a.key).cmp(&(b.table, &b.key)));
    v
}

#[allow(clippy::too_many_arguments)]
fn figures(
    store: &'static str,
    batch: usize,
    nrows: usize,
    cpu: u64,
    wall: f64,
    bytes: u64,
    load: Instant,
    loaded: usize,
) -> Figures {
    let f = Figures {
        store,
        batch,
        cpu_us_per_row: cpu as f64 / nrows as f64,
        cpu_us_per_entry: cpu as f64 / ENTRIES as f64,
        wall_s: wall,
        bytes_per_entry: bytes as f64 / ENTRIES as f64,
        load_ms: load.elapsed().as_secs_f64() * 1e3,
        loaded,
    };
    println!(
        "{:5} batch {:>6}: {:.2} µs CPU/row, {:.2} µs/entry, {:.1} s wall, {:.0} B/entry, load {} entries in {:.0} ms",
        f.store,
        f.batch,
        f.cpu_us_per_row,
        f.cpu_us_per_entry,
        f.wall_s,
        f.bytes_per_entry,
        f.loaded,
        f.load_ms
    );
    f
}

fn main() {
    let dir = std::env::args().nth(1).map(std::path::PathBuf::from);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = dir.unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir).expect("dir");
    let rows = rows();
    println!(
        "{} rows ({ENTRIES} entries, {DIRS} directories)",
        rows.len()
    );
    let mut all = Vec::new();
    for batch in [1_000, 100_000, rows.len()] {
        all.push(run_redb(&dir, &rows, batch));
        #[cfg(feature = "bench-fjall")]
        all.push(run_fjall(&dir, &rows, batch));
    }
    let json: Vec<String> = all
        .iter()
        .map(|f| {
            format!(
                "{{\"store\":\"{}\",\"batch\":{},\"cpu_us_per_row\":{:.3},\"cpu_us_per_entry\":{:.3},\"wall_s\":{:.2},\"bytes_per_entry\":{:.1},\"load_ms\":{:.1},\"loaded\":{}}}",
                f.store, f.batch, f.cpu_us_per_row, f.cpu_us_per_entry, f.wall_s, f.bytes_per_entry, f.load_ms, f.loaded
            )
        })
        .collect();
    println!(
        "{{\"bench\":\"fsindex_store_choice\",\"runs\":[{}]}}",
        json.join(",")
    );
}
