//! The committed fixture log of format version 1 (`tests/fixtures/v1/`), and
//! the test that reads it: each format version keeps a committed log that
//! this build must read.
//!
//! The fixture has a sealed segment (footer and sparse index) holding
//! records 1–12 with padding from durable commits, an unsealed, preallocated
//! tail segment holding records 13–16 as a crashed writer leaves it, and a
//! `consumers.json`. Its records cover Lustre, system and application
//! types, flags, target and parent ids, non-UTF-8 names and binary field
//! values. The tests read a copy (never the committed files) and compare it
//! with the table below, which is the expectation: it is never produced by
//! running the writer again. If this test fails, the format changed: bump
//! the version, add `fixtures/v2/`, and keep reading v1 or say why not.
//!
//! To regenerate (only when the format version changes):
//! `WEIR_REGEN_FIXTURES=1 cargo test -p weir-log --test format_fixture -- --ignored regenerate`

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use support::{copy_dir, footer, header, scan_segment, segment_files};
use weir_log::fault::{FaultyFs, PowerCut};
use weir_log::fs::StdFs;
use weir_log::segment::{BLOCK, FORMAT_VERSION};
use weir_log::{Field, Log, LogRecord, Options, Reader, Record, RecordType, Retention, TypeMask};

/// A field value: literal bytes, or `len` bytes of `pattern`.
#[derive(Clone, Copy)]
enum V {
    B(&'static [u8]),
    Pattern(usize),
}

/// `(index, type, flags, target, parent, name, fields, durable)`.
type Row = (
    u64,
    RecordType,
    u16,
    &'static [u8],
    &'static [u8],
    &'static [u8],
    &'static [(&'static str, V)],
    bool,
);

const FID_A: &[u8] = b"\x00\x00\x00\x02\x00\x00\x04\x01\x00\x00\x00\x07\x00\x00\x00\x00";
const FID_ROOT: &[u8] = b"\x00\x00\x00\x02\x00\x00\x00\x07\x00\x00\x00\x01\x00\x00\x00\x00";
const DEV_SDB: &[u8] = &(8u64 << 8 | 16).to_le_bytes();
const MNT_42: &[u8] = &42u64.to_le_bytes();
const MNT_1: &[u8] = &1u64.to_le_bytes();

#[rustfmt::skip]
const ROWS: &[Row] = &[
    (1, RecordType::CREAT, 0, FID_A, FID_ROOT, b"hello.txt", &[], false),
    (2, RecordType::MKDIR, 0x0001, b"\x00\x00\x00\x02", FID_ROOT, b"dir\xff\xfe", &[], true),
    (3, RecordType::HLINK, 0, FID_A, FID_ROOT, b"link", &[("uid", V::B(&1000u32.to_le_bytes())), ("mode", V::B(&0o100644u32.to_le_bytes()))], false),
    (4, RecordType::RENME, 0x8000, FID_A, FID_ROOT, b"old", &[("sfid", V::B(FID_A))], false),
    (5, RecordType::RNMTO, 0, FID_A, FID_ROOT, b"new", &[], true),
    (6, RecordType::UNLNK, 0x0003, FID_A, FID_ROOT, b"caf\xc3\xa9", &[], false),
    (7, RecordType::MARK, 0, b"", b"", b"", &[], false),
    (8, RecordType::DEVICE_ADD, 0, DEV_SDB, b"", b"sdb", &[("DEVNAME", V::B(b"/dev/sdb")), ("SIZE", V::B(&(1u64 << 30).to_le_bytes()))], false),
    (9, RecordType::PV_FOUND, 0, DEV_SDB, b"", b"sdb", &[("pv_uuid", V::B(b"Xv3yQk-0aBc-dEfG-hIjK-lMnO-pQrS-tUvWxY")), ("raw", V::B(b"\x00\x01\x02\xff"))], true),
    (10, RecordType::VG_COMPLETE, 0, b"vg0-uuid", b"", b"vg0", &[], false),
    (11, RecordType::MOUNT_ATTACH, 0, MNT_42, MNT_1, b"/mnt/data", &[("fstype", V::B(b"ext4")), ("opts", V::B(b"rw,relatime"))], false),
    (12, RecordType(200), 0xffff, b"app-object", b"", b"app\x00event", &[("k", V::B(b"")), ("cl\u{e9}", V::B(b"\x00\xff"))], true),
    // Too big for what is left of segment 1: it rolls to segment 13.
    (13, RecordType(65535), 0, b"", b"", b"big", &[("blob", V::Pattern(50_000))], false),
    (14, RecordType::MOUNT_DETACH, 0, MNT_42, MNT_1, b"/mnt/data", &[], false),
    (15, RecordType::XATTR, 0, FID_A, b"", b"user.x", &[("value", V::B(b"\x00\x00"))], true),
    (16, RecordType::DEVICE_REMOVE, 0x0002, DEV_SDB, b"", b"sdb", &[], true),
];

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + 3) % 251) as u8).collect()
}

fn value(v: V) -> Vec<u8> {
    match v {
        V::B(b) => b.to_vec(),
        V::Pattern(n) => pattern(n),
    }
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1")
}

const SEGMENTS: [&str; 2] = ["00000000000000000001.wlog", "00000000000000000013.wlog"];

/// The mask of the fixture's "audit" consumer.
fn audit_mask() -> TypeMask {
    let mut m = TypeMask::none();
    for t in [RecordType::CREAT, RecordType::UNLNK, RecordType(200)] {
        m.insert(t);
    }
    m
}

fn check_records(recs: &[LogRecord], from: u64) {
    let want: Vec<&Row> = ROWS.iter().filter(|r| r.0 >= from).collect();
    assert_eq!(recs.len(), want.len());
    let mut last_time = 0;
    for (r, w) in recs.iter().zip(want) {
        let (index, kind, flags, target, parent, name, fields, _) = *w;
        assert_eq!(r.index, index);
        assert_eq!((r.kind, r.flags), (kind, flags), "record {index}");
        assert_eq!(
            (&r.target[..], &r.parent[..]),
            (target, parent),
            "record {index}"
        );
        assert_eq!(r.name, name, "record {index}");
        let fields: Vec<(String, Vec<u8>)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), value(*v)))
            .collect();
        assert_eq!(r.fields, fields, "record {index}");
        assert!(
            r.time_ns >= last_time && r.time_ns > 0,
            "record {index} time"
        );
        last_time = r.time_ns;
    }
}

/// Checks the raw layout: headers, the sealed segment's footer and sparse
/// index, padding after durable commits, the preallocated unsealed tail.
fn check_layout(dir: &Path) {
    let segs = segment_files(dir);
    let names: Vec<_> = segs
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, SEGMENTS);
    let (b1, b2) = (
        std::fs::read(&segs[0]).unwrap(),
        std::fs::read(&segs[1]).unwrap(),
    );
    for (b, base) in [(&b1, 1), (&b2, 13)] {
        let h = header(b).expect("valid header");
        assert_eq!(
            (h.version, h.base_index, h.capacity),
            (FORMAT_VERSION, base, 64 * 1024)
        );
    }
    assert_eq!(FORMAT_VERSION, 1);
    let f = footer(&segs[0]).expect("segment 1 is sealed");
    assert_eq!((f.first_index, f.last_index), (1, 12));
    assert_eq!(f.entries, vec![(1, 4096)], "sparse index: the first record");
    assert!(f.first_time_ns > 0 && f.last_time_ns >= f.first_time_ns);
    let s1 = scan_segment(&b1[..f.data_end as usize], 1);
    assert_eq!(s1.next_index, 13);
    assert_eq!(s1.end, f.data_end);
    // After each durable commit (records 2, 5, 9), the next record starts
    // at a block boundary, past zero padding.
    for after in [2usize, 5, 9] {
        let (off, len) = (s1.frames[after - 1].0, s1.frames[after - 1].2 as u64);
        let next = s1.frames[after].0;
        assert!(
            next.is_multiple_of(BLOCK),
            "record {} after a durable commit",
            after + 1
        );
        assert!(next > off + len, "padding after record {after}");
        assert!(
            b1[(off + len) as usize..next as usize]
                .iter()
                .all(|&x| x == 0)
        );
    }
    assert!(footer(&segs[1]).is_none(), "the tail is not sealed");
    assert_eq!(b2.len(), 64 * 1024, "the tail is preallocated");
    let s2 = scan_segment(&b2, 13);
    assert_eq!(s2.next_index, 17);
    assert!(!s2.torn(), "{s2:?}");
}

fn copy() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    copy_dir(&fixture_dir(), t.path());
    t
}

#[test]
fn v1_fixture_reads_back_exactly() {
    let t = copy();
    let dir = t.path();
    check_layout(dir);
    let all: Vec<_> = Reader::open_dir(dir, 1).map(|r| r.unwrap()).collect();
    check_records(&all, 1);
    for from in [7, 12, 13, 16] {
        let part: Vec<_> = Reader::open_dir(dir, from).map(|r| r.unwrap()).collect();
        check_records(&part, from);
    }
    let masked: Vec<_> = Reader::open_dir(dir, 1)
        .with_mask(audit_mask())
        .map(|r| r.unwrap().index)
        .collect();
    assert_eq!(masked, [1, 6, 12]);
    let v = weir_log::verify(&StdFs, dir, |_, _| {}).unwrap();
    assert!(v.problem.is_none(), "{v:?}");
    assert_eq!(
        (v.segments, v.records, v.first_index, v.last_index),
        (2, 16, 1, 16)
    );
    let consumers = weir_log::read_consumers(&StdFs, dir, 16, weir_log_now()).unwrap();
    let got: Vec<_> = consumers
        .iter()
        .map(|c| (c.id, c.name.as_str(), c.cleared, c.lag))
        .collect();
    assert_eq!(got, [(1, "audit", 3, 13), (2, "ops", 12, 4)]);
    assert_eq!(consumers[0].mask, audit_mask());
    assert_eq!(consumers[1].mask, TypeMask::all());
}

fn weir_log_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The writer opens a v1 log, recovers its unsealed tail, and continues it.
#[test]
fn v1_fixture_opens_for_writing_and_continues() {
    let t = copy();
    let dir = t.path();
    // No idle eviction: the fixture's consumers are as old as the fixture.
    let opts = || {
        Options::default()
            .segment_size(64 * 1024)
            .retention(Retention {
                max_idle_records: None,
                max_idle_time: None,
                ..Retention::default()
            })
    };
    let log = Log::open(dir, opts()).unwrap();
    let rec = log.recovery();
    assert_eq!(rec.next_index, 17, "{rec:?}");
    assert!(rec.torn.is_none() && rec.reset.is_none(), "{rec:?}");
    let all: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
    check_records(&all, 1);
    let names: Vec<_> = log
        .consumer_list()
        .into_iter()
        .map(|c| (c.name, c.cleared))
        .collect();
    assert_eq!(names, [("audit".to_owned(), 3), ("ops".to_owned(), 12)]);
    let audit: Vec<_> = log
        .consumer_reader("audit")
        .unwrap()
        .map(|r| r.unwrap().index)
        .collect();
    assert_eq!(audit, [6, 12]);
    let d = log
        .append_durable(&Record::new(RecordType::MARK).name(b"after v1"))
        .unwrap();
    assert_eq!(d.index(), 17);
    log.close().unwrap();
    let log = Log::open(dir, opts()).unwrap();
    assert_eq!(log.recovery().next_index, 18);
    drop(log);
    let all: Vec<_> = Reader::open_dir(dir, 1).map(|r| r.unwrap()).collect();
    check_records(&all[..16], 1);
    assert_eq!(all[16].name, b"after v1");
    let v = weir_log::verify(&StdFs, dir, |_, _| {}).unwrap();
    assert!(v.problem.is_none(), "{v:?}");
    assert_eq!(v.last_index, 17);
    // The committed fixture itself was not touched.
    check_layout(&fixture_dir());
}

/// Writes the fixture from `ROWS`. Run only to create a new format version's
/// fixture (see the header); the result is committed.
#[test]
#[ignore = "writes tests/fixtures/v1; run with WEIR_REGEN_FIXTURES=1 and --ignored"]
fn regenerate_fixture_v1() {
    if std::env::var_os("WEIR_REGEN_FIXTURES").is_none_or(|v| v != "1") {
        println!("skipped: set WEIR_REGEN_FIXTURES=1 to rewrite the fixture");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let opts = Options::default()
        .segment_size(64 * 1024)
        .sync_interval(None)
        .fs(Arc::new(fs.clone()));
    let log = Log::open(t.path(), opts).unwrap();
    for &(index, kind, flags, target, parent, name, fields, durable) in ROWS {
        let values: Vec<Vec<u8>> = fields.iter().map(|(_, v)| value(*v)).collect();
        let fields: Vec<Field<'_>> = fields
            .iter()
            .zip(&values)
            .map(|((k, _), v)| Field { key: k, value: v })
            .collect();
        let r = Record::new(kind)
            .flags(flags)
            .target(target)
            .parent(parent)
            .name(name)
            .fields(&fields);
        let a = log.append(&r).unwrap();
        assert_eq!(a.index(), index);
        if durable {
            log.wait_durable(a).unwrap();
        }
        if index == 2 {
            log.register("audit", audit_mask()).unwrap();
        }
        if index == 5 {
            log.clear("audit", 3).unwrap();
        }
        if index == 12 {
            log.register("ops", TypeMask::all()).unwrap();
        }
    }
    // Die before close seals the tail, so the fixture keeps an unsealed one.
    fs.crash_after(0);
    drop(log);
    fs.power_cut(PowerCut::LoseAll).unwrap();
    let out = fixture_dir();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    for name in SEGMENTS.iter().copied().chain([weir_log::CONSUMERS_FILE]) {
        std::fs::copy(t.path().join(name), out.join(name)).unwrap();
    }
    check_layout(&out);
    let all: Vec<_> = Reader::open_dir(&out, 1).map(|r| r.unwrap()).collect();
    check_records(&all, 1);
}
