//! Writes the seed corpora under `fuzz/corpus/<target>/` from real encoded
//! records and segments, so the fuzzers start from valid inputs and mutate
//! from there (random bytes would almost never pass a CRC).
//!
//! Run from the workspace root:
//! `cargo run --manifest-path fuzz/Cargo.toml --example gen_seeds -- fuzz/corpus`
#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use weir_log::codec::encode;
use weir_log::mem::MemFs;
use weir_log::segment::{Footer, HEADER_LEN, SegmentHeader, align_up, segment_path};
use weir_log::{Field, Log, Options, Record, RecordType};

/// A few records of different shapes, as `(record, index)` frames.
fn frames(first: u64, n: u64) -> Vec<Vec<u8>> {
    let fields = [
        Field {
            key: "uuid",
            value: b"\x01\x02\xff\x00",
        },
        Field {
            key: "cl\u{e9}",
            value: b"",
        },
    ];
    (0..n)
        .map(|k| {
            let i = first + k;
            let name = format!("file-{i}\u{1f}");
            let r = match k % 3 {
                0 => Record::new(RecordType::CREAT)
                    .name(name.as_bytes())
                    .parent(b"\x00\x01"),
                1 => Record::new(RecordType(4000))
                    .flags(7)
                    .target(b"\xfe\xff")
                    .name(b"\xc3(")
                    .fields(&fields),
                _ => Record::new(RecordType::MOUNT_ATTACH)
                    .target(b"42")
                    .name(b"/mnt/x"),
            };
            encode(&r, i, 1_700_000_000_000_000_000 + i).unwrap()
        })
        .collect()
}

/// The bytes of a segment file: header, frames, then either a footer (with a
/// sparse-index entry for every `stride`-th record) or zeros to the next block.
fn segment(base: u64, frames: &[Vec<u8>], sealed: bool, stride: usize) -> Vec<u8> {
    let h = SegmentHeader {
        version: 1,
        base_index: base,
        capacity: 64 * 1024,
        created_ns: 1,
    };
    let mut b = h.encode();
    let mut entries = Vec::new();
    for (k, f) in frames.iter().enumerate() {
        if k % stride == 0 {
            entries.push((base + k as u64, b.len() as u64));
        }
        b.extend_from_slice(f);
    }
    let data_end = b.len() as u64;
    b.resize(align_up(data_end).max(HEADER_LEN + 4096) as usize, 0);
    if sealed {
        let footer = Footer {
            first_index: base,
            last_index: base + frames.len() as u64 - 1,
            data_end,
            first_time_ns: 1,
            last_time_ns: 2,
            entries,
        };
        let at = b.len() as u64;
        b.extend_from_slice(&footer.encode(at));
    }
    b
}

/// A `read_segment` input: flags, skip, then `(base, body)` with the header
/// left to the target.
fn segment_input(skip: u16, segs: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend_from_slice(&skip.to_le_bytes());
    for (base, file) in segs {
        let body = &file[HEADER_LEN as usize..];
        v.extend_from_slice(&base.to_le_bytes());
        v.extend_from_slice(&(body.len() as u32).to_le_bytes());
        v.extend_from_slice(body);
    }
    v
}

fn write(root: &Path, target: &str, name: &str, bytes: &[u8]) {
    let d = root.join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(name), bytes).unwrap();
}

fn main() {
    let root = std::env::args()
        .nth(1)
        .expect("usage: gen_seeds CORPUS_DIR");
    let root = Path::new(&root);

    for (k, f) in frames(1, 3).iter().enumerate() {
        let mut v = vec![0u8];
        v.extend_from_slice(f);
        write(root, "decode_record", &format!("frame-{k}"), &v);
    }

    for (name, s) in [
        ("list", "CREAT,UNLNK,200-210"),
        ("except", "all,-MARK,^DEVICE_ADD"),
        ("ranges", "64-127, 4000 ,mount_attach"),
        ("none", "-all"),
    ] {
        write(root, "mask_parse", name, s.as_bytes());
    }

    let one = segment(1, &frames(1, 5), true, 2);
    write(
        root,
        "read_segment",
        "sealed",
        &segment_input(3, &[(1, one.clone())]),
    );
    let two = segment(6, &frames(6, 4), false, 1);
    write(
        root,
        "read_segment",
        "sealed-then-active",
        &segment_input(6, &[(1, one), (6, two)]),
    );

    // A segment written by the log itself, trimmed after its last block.
    let dir = tempfile_dir();
    let fs = Arc::new(MemFs::new());
    let log = Log::open(
        &dir,
        Options::default().segment_size(64 * 1024).fs(fs.clone()),
    )
    .unwrap();
    for i in 0..20u32 {
        let name = format!("n{i}");
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(name.as_bytes()))
            .unwrap();
        if i % 7 == 0 {
            log.sync().unwrap();
        }
    }
    log.close().unwrap();
    let mut real = fs.read_file(segment_path(&dir, 1)).unwrap();
    let end = real.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    real.truncate(align_up(end as u64) as usize);
    write(
        root,
        "read_segment",
        "written-by-log",
        &segment_input(10, &[(1, real)]),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Log::open` takes its lock in a real directory.
fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("weir-gen-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
