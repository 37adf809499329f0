//! What an open and a seek read, counted by `MemFs::bytes_read`.
//!
//! - Recovery after a crash scans only the tail segment (`docs/format.md`,
//!   "Recovery": "the work is proportional to one segment, whatever the
//!   size of the log"), so a long log must not make an open read more.
//! - A reader that starts deep inside a sealed segment seeks with the
//!   footer's sparse index and scans from the 64 KiB stretch that holds
//!   its record, not from the segment's first record.
//!
//! Both are costs no functional test notices: a full scan returns the same
//! records, only slower.

mod support;

use std::path::Path;
use std::sync::Arc;

use support::{Payload, check_sequence};
use weir_log::fs::FileSystem;
use weir_log::mem::MemFs;
use weir_log::segment::{Footer, INDEX_STRIDE, parse_segment_name};
use weir_log::{Log, Options, Reader, Record, RecordType};

const SEG: u64 = 64 * 1024;

fn opts(fs: &MemFs, segment_size: u64) -> Options {
    Options::default()
        .segment_size(segment_size)
        .fs(Arc::new(fs.clone()))
}

/// The segment files of `fs`, sorted by name (= first index).
fn segments(fs: &MemFs) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = fs
        .files()
        .into_iter()
        .filter(|p| parse_segment_name(p).is_some())
        .collect();
    v.sort();
    v
}

/// The footer of a sealed segment on `fs`, if it has a valid one.
fn footer(fs: &MemFs, path: &Path) -> Option<Footer> {
    let f = fs.open_read(path).ok()?;
    let len = f.len().ok()?;
    Footer::read(&*f, len).ok()??.ok()
}

/// Checks that `log` serves exactly `Payload::new(salt, 1..=n)`.
fn check_all(log: &Log, salt: u64, n: u64) {
    let recs: Vec<_> = log.reader(1).map(Result::unwrap).collect();
    check_sequence(&recs, salt);
    assert_eq!(recs.len() as u64, n);
}

#[test]
fn recovery_reads_only_the_tail_however_long_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let salt = 11;
    let fs = MemFs::new();
    let log = Log::open(dir.path(), opts(&fs, SEG)).unwrap();
    let mut n = 0;
    while segments(&fs).len() <= 50 {
        n += 1;
        let _ = Payload::new(salt, n).with(|r| log.append(r)).unwrap();
        if n % 100 == 0 {
            log.sync().unwrap();
        }
    }
    assert_eq!(log.sync().unwrap().unwrap().index(), n);
    // What a SIGKILL right after the sync leaves: the older segments
    // sealed, the tail unsealed with its records synced. The log is idle,
    // so the copy is consistent.
    let image = MemFs::new();
    for p in fs.files() {
        image.write_file(&p, &fs.read_file(&p).unwrap());
    }
    log.close().unwrap();
    let segs = segments(&image);
    let tail = segs.last().unwrap();
    assert!(footer(&image, tail).is_none(), "the tail must be unsealed");
    let total: u64 = segs
        .iter()
        .map(|p| image.read_file(p).unwrap().len() as u64)
        .sum();

    // The original is closed, so its directory's writer lock is free for
    // the copy, which lives at the same path.
    let log = Log::open(dir.path(), opts(&image, SEG)).unwrap();
    let crash_open = image.bytes_read();
    let rec = log.recovery().clone();
    assert_eq!(rec.next_index, n + 1, "{rec:?}");
    // The tail was scanned; it ends inside a block (the last commit's
    // padding is zeros, like unwritten space), so recovery sealed it.
    assert!(rec.torn.is_none() && rec.scanned_bytes > 0, "{rec:?}");
    assert_eq!(rec.segments, segs.len());
    // The tail is read about twice (its records, then the rest of the
    // file for bytes after a torn write), and the segment before it gives
    // its footer for the continuity check. A scan of every segment
    // (`total`, over 3 MiB) is far above this bound; it does not catch a
    // read of each older segment's footer (about 120 bytes each).
    let bound = 2 * SEG + 4096;
    eprintln!(
        "open after a crash read {crash_open} bytes of a {total}-byte log ({} segments)",
        segs.len()
    );
    assert!(
        crash_open <= bound,
        "an open after a crash read {crash_open} bytes of a {total}-byte log"
    );
    check_all(&log, salt, n);
    log.close().unwrap();

    // A clean close sealed the tail: the next open reads its header and
    // footer, and the footer before it. The footers of all 51 segments
    // would be over 6 KiB.
    let before = image.bytes_read();
    let log = Log::open(dir.path(), opts(&image, SEG)).unwrap();
    let clean_open = image.bytes_read() - before;
    eprintln!("clean open read {clean_open} bytes of a {total}-byte log");
    assert_eq!(log.recovery().next_index, n + 1);
    assert!(
        clean_open <= 4096,
        "a clean open read {clean_open} bytes of a {total}-byte log"
    );
    check_all(&log, salt, n);
    log.close().unwrap();
}

#[test]
fn a_reader_seeks_into_a_sealed_segment_with_its_sparse_index() {
    const BIG: u64 = 4 << 20;
    let dir = tempfile::tempdir().unwrap();
    let fs = MemFs::new();
    let log = Log::open(dir.path(), opts(&fs, BIG)).unwrap();
    // 64-byte frames: about 65,000 fill a segment; a few more roll it, and
    // the roll seals it.
    let rec = Record::new(RecordType::CREAT).name(&[b'n'; 28]);
    while segments(&fs).len() < 2 {
        for _ in 0..1000 {
            let _ = log.append(&rec).unwrap();
        }
        log.sync().unwrap();
    }
    let first = &segments(&fs)[0];
    let f = footer(&fs, first).expect("the first segment is sealed");
    assert!(f.entries.len() > 50, "{} sparse entries", f.entries.len());
    // Three quarters of the way in: a scan from the start reads about 3 MiB.
    let deep = f.first_index + (f.last_index - f.first_index) * 3 / 4;
    // The scan starts at the entry at or before `deep` and reads 256 KiB
    // chunks (`scan.rs`): one chunk (four stretches) serves the record and
    // the batch decoded with it; then the header and the footer, and a
    // stretch of slack.
    let bound = 5 * INDEX_STRIDE + f.encoded_len();
    for what in ["live", "directory"] {
        let before = fs.bytes_read();
        let mut reader = match what {
            "live" => log.reader(deep),
            _ => Reader::open_dir_with(Arc::new(fs.clone()), dir.path(), deep),
        };
        let r = reader.next_record().unwrap().expect("a record");
        let read = fs.bytes_read() - before;
        eprintln!(
            "{what} reader: read {read} bytes to seek to {deep} in a segment of {} data bytes",
            f.data_end
        );
        assert_eq!(r.index, deep);
        assert!(
            read <= bound,
            "a {what} reader read {read} bytes to find index {deep} in a segment of {} data bytes",
            f.data_end
        );
    }
    log.close().unwrap();
}
