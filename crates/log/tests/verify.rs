//! `verify`, the full check of a log directory: what it must find in an
//! unsealed tail and in a sealed segment's footer, what a writer working
//! beside it must not make it report, and what its figures count when it
//! finds a problem.
//!
//! Most segments here are written by hand, laid out as the writer lays
//! them out (durable commits padded to the next block), so that a test can
//! damage exactly one block or one footer field.

mod support;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use support::observed::{Observed, Observer};
use support::{footer, scan_segment, segment_files};
use weir_log::codec::{self, DecodeError};
use weir_log::fs::StdFs;
use weir_log::segment::{
    BLOCK, FORMAT_VERSION, Footer, HEADER_LEN, SegmentHeader, TRAILER_LEN, align_up, segment_path,
};
use weir_log::{Error, Log, Options, Reader, Record, RecordType, VerifyReport};

/// The size of a hand-written tail segment: its preallocation.
const CAPACITY: usize = 1 << 20;
const T0: u64 = 1_700_000_000_000_000_000;

fn verify(dir: &Path) -> VerifyReport {
    weir_log::verify(&StdFs, dir, |_, _| {}).unwrap()
}

/// A CREAT record with index `index`, its name filling it out to `len`
/// bytes.
fn frame(index: u64, len: usize) -> Vec<u8> {
    let name = vec![b'n'; len - codec::HEADER_LEN];
    let f = codec::encode(
        &Record::new(RecordType::CREAT).name(&name),
        index,
        T0 + index,
    )
    .unwrap();
    assert_eq!(f.len(), len);
    f
}

/// A hand-written unsealed segment.
struct Tail {
    bytes: Vec<u8>,
    /// `(index, offset)` of every record.
    frames: Vec<(u64, u64)>,
    /// The end of the last record.
    end: u64,
}

impl Tail {
    /// Segment `base` as a writer that died leaves it: one durable commit
    /// of `n` records of `len` bytes for each `n` of `commits`, each
    /// commit padded to the next block, then zeros to `CAPACITY`.
    fn new(base: u64, commits: &[usize], len: usize) -> Tail {
        let mut bytes = SegmentHeader {
            version: FORMAT_VERSION,
            base_index: base,
            capacity: CAPACITY as u64,
            created_ns: T0,
        }
        .encode();
        let (mut frames, mut index, mut end) = (Vec::new(), base, HEADER_LEN);
        for &n in commits {
            for _ in 0..n {
                frames.push((index, bytes.len() as u64));
                bytes.extend_from_slice(&frame(index, len));
                index += 1;
            }
            end = bytes.len() as u64;
            bytes.resize(align_up(end) as usize, 0);
        }
        bytes.resize(CAPACITY, 0);
        Tail { bytes, frames, end }
    }

    fn next_index(&self) -> u64 {
        self.frames.last().map(|f| f.0 + 1).unwrap()
    }

    /// The footer that seals exactly these records, and where it goes.
    fn footer(&self) -> (u64, Vec<u8>) {
        let at = align_up(self.end);
        let f = Footer {
            first_index: self.frames[0].0,
            last_index: self.next_index() - 1,
            data_end: self.end,
            first_time_ns: T0 + self.frames[0].0,
            last_time_ns: T0 + self.next_index() - 1,
            entries: vec![(self.frames[0].0, HEADER_LEN)],
        };
        (at, f.encode(at))
    }
}

#[test]
fn a_clean_unsealed_tail_ending_in_zeros_is_ok() {
    // A live writer's tail (or a killed one's) ends in unwritten space.
    let dir = tempfile::tempdir().unwrap();
    let t = Tail::new(1, &[3; 20], 300);
    std::fs::write(segment_path(dir.path(), 1), &t.bytes).unwrap();
    let v = verify(dir.path());
    assert!(v.problem.is_none(), "{v:?}");
    assert_eq!((v.records, v.last_index), (60, 60), "{v:?}");
    assert_eq!(v.bytes, CAPACITY as u64, "{v:?}");
}

#[test]
fn records_after_a_zeroed_block_in_the_tail_are_a_problem() {
    // Regression: verify stopped at the first zero length word on a block
    // boundary of the unsealed tail and said "ok", never looking past it.
    // The next open found the records after the hole, took them for a torn
    // tail and dropped them, though they had been acknowledged as durable.
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tail::new(1, &[3; 60], 300);
    // Zero the block of commit 30 (records 88-90).
    let (index, at) = t.frames[87];
    assert_eq!((index, at % BLOCK), (88, 0));
    t.bytes[at as usize..(at + BLOCK) as usize].fill(0);
    let path = segment_path(dir.path(), 1);
    std::fs::write(&path, &t.bytes).unwrap();
    let valid_end = t.frames[86].1 + 300;

    let (v, p) = first_problem(dir.path());
    assert_eq!(
        (&p.path, p.offset, p.index),
        (&path, valid_end, 88),
        "{v:?}"
    );
    assert!(
        matches!(p.kind, DecodeError::BadSegment(s) if s.contains("after the end")),
        "{v:?}"
    );
    // Its figures: what was checked before the problem.
    assert_eq!((v.segments, v.records, v.last_index), (1, 87, 87), "{v:?}");
    assert_eq!(v.bytes, valid_end, "{v:?}");

    // Why it matters: the next open drops records 91-180.
    let log = Log::open(dir.path(), Options::default()).unwrap();
    let torn = log.recovery().torn.clone().expect("a torn tail");
    assert_eq!((torn.valid_end, torn.dropped_records), (valid_end, 90));
    assert_eq!(log.recovery().next_index, 88);
    log.close().unwrap();
}

#[test]
fn a_torn_record_at_the_tail_is_still_reported_as_such() {
    // The look past the end must not hide a bad frame: the first problem
    // is the torn record itself, with its cause.
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tail::new(1, &[3; 10], 300);
    let at = t.frames[20].1;
    t.bytes[at as usize + 20] ^= 1;
    std::fs::write(segment_path(dir.path(), 1), &t.bytes).unwrap();
    let (v, p) = first_problem(dir.path());
    assert_eq!((p.offset, p.index), (at, 21), "{v:?}");
    assert!(matches!(p.kind, DecodeError::Crc { .. }), "{v:?}");
}

// ---- A writer working beside verify ----

/// What a writer does to one segment file while verify reads it: on the
/// first read of that file that starts in `at`, before the read.
#[derive(Debug)]
struct Hook {
    path: PathBuf,
    at: std::ops::Range<u64>,
    /// Bytes written at their offset.
    writes: Vec<(u64, Vec<u8>)>,
    /// Then the file truncated to this length.
    truncate: Option<u64>,
    fired: AtomicBool,
}

impl Hook {
    fn fire(&self) {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.path)
            .unwrap();
        for (off, b) in &self.writes {
            f.write_all_at(b, *off).unwrap();
        }
        if let Some(len) = self.truncate {
            f.set_len(len).unwrap();
        }
    }
}

impl Observer for Hook {
    fn before_read(&self, path: &Path, off: u64) {
        if path == self.path && self.at.contains(&off) && !self.fired.swap(true, Ordering::SeqCst) {
            self.fire();
        }
    }
}

/// Verifies the tail `t` (segment 1) while `writes` (and `truncate`) land
/// on the first read of it that starts in `at`; checks that they did land.
fn verify_beside_a_writer(
    t: &Tail,
    at: std::ops::Range<u64>,
    writes: Vec<(u64, Vec<u8>)>,
    truncate: Option<u64>,
) -> VerifyReport {
    let dir = tempfile::tempdir().unwrap();
    let path = segment_path(dir.path(), 1);
    std::fs::write(&path, &t.bytes).unwrap();
    let hook = Arc::new(Hook {
        path,
        at,
        writes,
        truncate,
        fired: AtomicBool::new(false),
    });
    let v = weir_log::verify(
        &Observed::new(Arc::new(StdFs), hook.clone()),
        dir.path(),
        |_, _| {},
    )
    .unwrap();
    assert!(
        hook.fired.load(Ordering::SeqCst),
        "the writer never acted: {v:?}"
    );
    v
}

#[test]
fn records_appended_while_verify_looks_past_the_tail_are_no_problem() {
    // Guards the fix for records after a hole: verify takes no lock, and
    // a writer may append between its scan of the tail and its look at the
    // rest. Those records are new, not data after a hole.
    let t = Tail::new(1, &[3; 10], 300);
    let next = align_up(t.end);
    let mut commit = frame(31, 300);
    commit.extend_from_slice(&frame(32, 300));
    // The first read at or past the end of the records is the look past it.
    let v = verify_beside_a_writer(&t, t.end..next, vec![(next, commit)], None);
    assert!(v.problem.is_none(), "{v:?}");
    assert_eq!((v.records, v.last_index), (32, 32), "{v:?}");
}

#[test]
fn a_seal_made_while_verify_runs_is_no_problem() {
    // Guards the fix for records after a hole: a writer sealing the tail
    // writes its footer after the records, then truncates the file. Two
    // layouts: the records end mid-block (the footer follows padding) and
    // on a block boundary (the footer follows them at once).
    for t in [
        Tail::new(1, &[3; 10], 300),
        Tail::new(1, &[1; 10], BLOCK as usize),
    ] {
        let (at, bytes) = t.footer();
        let sealed_len = at + bytes.len() as u64;
        // The footer written, the file not yet truncated, when verify looks
        // past the records.
        let v = verify_beside_a_writer(&t, t.end..at + 1, vec![(at, bytes.clone())], None);
        assert!(v.problem.is_none(), "end {}: {v:?}", t.end);
        assert_eq!(v.records, t.frames.len() as u64, "{v:?}");
        // The whole seal done while verify scans the records.
        let v = verify_beside_a_writer(
            &t,
            HEADER_LEN..HEADER_LEN + 1,
            vec![(at, bytes)],
            Some(sealed_len),
        );
        assert!(v.problem.is_none(), "end {}: {v:?}", t.end);
        assert_eq!(v.records, t.frames.len() as u64, "{v:?}");
        assert_eq!(v.bytes, sealed_len, "{v:?}");
    }
}

#[test]
fn a_footer_for_other_records_after_the_tail_is_a_problem() {
    // Only a footer that seals exactly the records before it is a seal in
    // progress; any other is data after the end.
    let t = Tail::new(1, &[3; 10], 300);
    let (at, _) = t.footer();
    let f = Footer {
        first_index: 1,
        last_index: 40,
        data_end: t.end,
        first_time_ns: T0,
        last_time_ns: T0,
        entries: vec![(1, HEADER_LEN)],
    };
    let mut bytes = t.bytes.clone();
    let enc = f.encode(at);
    bytes[at as usize..at as usize + enc.len()].copy_from_slice(&enc);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(segment_path(dir.path(), 1), &bytes).unwrap();
    let (v, p) = first_problem(dir.path());
    assert_eq!((p.offset, p.index), (t.end, 31), "{v:?}");
}

// ---- Sealed segments: the footer ----

/// `records` records of about 440 bytes in 64 KiB segments, closed: at
/// least `segments` sealed segments. Returns the segment files.
fn closed_log_of_segments(dir: &Path, records: usize, segments: usize) -> Vec<PathBuf> {
    let log = Log::open(dir, Options::default().segment_size(64 * 1024)).unwrap();
    let name = [3u8; 400];
    for _ in 0..records {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&name))
            .unwrap();
    }
    log.close().unwrap();
    let files = segment_files(dir);
    assert!(files.len() >= segments, "{files:?}");
    files
}

/// A log of one sealed segment written by the writer: 300 records of 900
/// bytes, without durable commits, so the data ends mid-block and the
/// sparse index has several entries. Returns the segment's path.
fn sealed_log(dir: &Path) -> PathBuf {
    let log = Log::open(dir, Options::default().sync_interval(None)).unwrap();
    let name = [7u8; 900 - codec::HEADER_LEN];
    for _ in 0..300 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&name))
            .unwrap();
    }
    log.close().unwrap();
    let files = segment_files(dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let f = footer(&files[0]).expect("sealed");
    assert!(f.entries.len() >= 4, "{f:?}");
    assert_ne!(f.data_end % BLOCK, 0, "{f:?}");
    assert!(verify(dir).problem.is_none());
    files[0].clone()
}

/// Rewrites the footer of the segment at `path` as `change` makes it,
/// re-encoded with a correct CRC, at the offset `change` returns.
fn rewrite_footer(path: &Path, change: impl FnOnce(&mut Footer) -> u64) -> (Footer, u64) {
    let mut f = footer(path).unwrap();
    let mut b = std::fs::read(path).unwrap();
    let at = change(&mut f);
    b.truncate(f.data_end as usize);
    b.resize(at as usize, 0);
    b.extend_from_slice(&f.encode(at));
    std::fs::write(path, &b).unwrap();
    (f, at)
}

/// What `verify` reports of the log in `dir`, which must have a problem.
fn first_problem(dir: &Path) -> (weir_log::VerifyReport, weir_log::Problem) {
    let v = verify(dir);
    let p = v
        .problem
        .clone()
        .unwrap_or_else(|| panic!("no problem: {v:?}"));
    (v, p)
}

/// Where footer entry `k` sits when the footer is at `at`.
fn entry_at(at: u64, k: usize) -> u64 {
    at + Footer::len_for(k) - TRAILER_LEN
}

#[test]
fn a_sparse_index_entry_off_its_record_is_a_problem() {
    // Regression: verify checked a footer's last index and data end only.
    // An entry whose offset is off by one passed, and a reader seeking by
    // it then failed with Corrupt.
    let dir = tempfile::tempdir().unwrap();
    let path = sealed_log(dir.path());
    let (f, at) = rewrite_footer(&path, |f| {
        f.entries[2].1 += 1;
        align_up(f.data_end)
    });
    let index = f.entries[2].0;
    // The premise: a reader from that index fails.
    let first = Reader::open_dir(dir.path(), index).next();
    assert!(
        matches!(first, Some(Err(Error::Corrupt { .. }))),
        "{first:?}"
    );
    let (v, p) = first_problem(dir.path());
    assert_eq!((p.offset, p.index), (entry_at(at, 2), index), "{v:?}");
    assert!(matches!(p.kind, DecodeError::BadSegment(_)), "{v:?}");
    // Every record before it was checked; its own is sound, too.
    assert_eq!((v.records, v.last_index), (index, index), "{v:?}");
}

#[test]
fn a_sparse_index_entry_naming_another_record_is_a_problem() {
    // Regression, as above: the offset is a record's start, but not the
    // start of the record with that index.
    let dir = tempfile::tempdir().unwrap();
    let path = sealed_log(dir.path());
    let (f, at) = rewrite_footer(&path, |f| {
        f.entries[1].0 += 1;
        align_up(f.data_end)
    });
    let (v, p) = first_problem(dir.path());
    assert_eq!(
        (p.offset, p.index),
        (entry_at(at, 1), f.entries[1].0),
        "{v:?}"
    );
}

#[test]
fn a_footer_whose_first_index_is_not_the_base_is_a_problem() {
    // Regression: verify never compared the footer's first index with the
    // segment's base index. The second segment's footer here says it
    // starts one index early.
    let dir = tempfile::tempdir().unwrap();
    let files = closed_log_of_segments(dir.path(), 300, 3);
    let base = weir_log::segment::parse_segment_name(&files[1]).unwrap();
    let (_, at) = rewrite_footer(&files[1], |f| {
        f.first_index = base - 1;
        align_up(f.data_end)
    });
    let (v, p) = first_problem(dir.path());
    assert_eq!(
        (&p.path, p.offset, p.index),
        (&files[1], at + 8, base),
        "{v:?}"
    );
    assert_eq!((v.segments, v.records), (2, base - 1), "{v:?}");
}

#[test]
fn a_footer_not_at_the_block_after_the_data_is_a_problem() {
    // Regression: verify never checked that the footer sits at the first
    // block boundary after the data (docs/format.md, "Footer and trailer"):
    // not one block later, nor right after the data.
    for later in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = sealed_log(dir.path());
        let (_, at) = rewrite_footer(&path, |f| {
            if later {
                align_up(f.data_end) + BLOCK
            } else {
                f.data_end
            }
        });
        let (v, p) = first_problem(dir.path());
        assert_eq!((p.offset, p.index), (at, 1), "later {later}: {v:?}");
    }
}

// ---- The figures ----

#[test]
fn the_figures_count_what_was_checked_up_to_the_problem() {
    // Regression: with a problem, `segments` counted every segment listed
    // and `bytes` only the segments finished before it (0 for a problem in
    // the first), so the summary said more and less than was checked.
    let dir = tempfile::tempdir().unwrap();
    let files = closed_log_of_segments(dir.path(), 600, 4);
    assert!(verify(dir.path()).problem.is_none());

    // Damage a record in the middle of the second segment.
    let first_len = std::fs::metadata(&files[0]).unwrap().len();
    let base = weir_log::segment::parse_segment_name(&files[1]).unwrap();
    let mut b = std::fs::read(&files[1]).unwrap();
    let s = scan_segment(&b, base);
    let k = s.frames.len() / 2;
    let (at, index, _) = s.frames[k];
    b[at as usize + 16] ^= 1;
    std::fs::write(&files[1], &b).unwrap();

    let (v, p) = first_problem(dir.path());
    assert_eq!((p.offset, p.index), (at, index), "{v:?}");
    assert_eq!(v.segments, 2, "{v:?}");
    assert_eq!((v.records, v.last_index), (index - 1, index - 1), "{v:?}");
    assert_eq!(v.bytes, first_len + at, "{v:?}");
}
