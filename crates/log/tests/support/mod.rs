//! Shared helpers for the fault, power-cut, full-disk and fixture tests.
//!
//! - [`Payload`]: the record a workload writes for an index, derived from a
//!   salt and the index alone, so a test can say what every index must hold
//!   without remembering what it wrote.
//! - [`check_sequence`] checks records against that model, and
//!   [`check_log`] reads a whole log directory and checks it against that
//!   model: gap-free from 1, every record exact, `verify` clean.
//! - [`scan_segment`] and [`predict`]: a small scanner written from
//!   `docs/format.md`, separate from the crate's own, and the recovery it
//!   implies for the bytes left on disk.
//! - [`within`]: a hang guard, so "never block without bound" fails a test
//!   instead of hanging it; [`eventually`], a poll for what the committer
//!   does on its own time.
//! - [`fill`]: appends a run of 500-byte records; [`segments`], a small
//!   log for retention tests (64 KiB segments, limits in segments).
//! - [`observed::Observed`]: a filesystem that passes every call through
//!   and tells a test's [`observed::Observer`] what was done;
//!   [`segment_peak::SegmentPeak`] is one, which keeps the peak size of the
//!   segment files.
//! - [`wait_until_durable`]: waits out the failed retries a healed fault
//!   may still report.
#![allow(dead_code, unreachable_pub)] // each test binary uses a subset

pub mod observed;
pub mod segment_peak;
pub mod segments;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use weir_log::codec::{self, DecodeError};
use weir_log::fs::StdFs;
use weir_log::segment::parse_segment_name;
use weir_log::segment::{BLOCK, HEADER_LEN, SegmentHeader};
use weir_log::{Appended, Error, Field, Log, LogRecord, Reader, Record, RecordType, TornTail};

/// ENOSPC.
pub const ENOSPC: i32 = rustix::io::Errno::NOSPC.raw_os_error();
/// EIO.
pub const EIO: i32 = rustix::io::Errno::IO.raw_os_error();

/// A 64-bit mixer (splitmix64), for deterministic variety.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Deterministic bytes: `n` of them, seeded.
pub fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 8);
    let mut s = seed;
    while v.len() < n {
        s = mix(s);
        v.extend_from_slice(&s.to_le_bytes());
    }
    v.truncate(n);
    v
}

/// The record a workload writes at `index` under `salt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub kind: RecordType,
    pub flags: u16,
    pub target: Vec<u8>,
    pub parent: Vec<u8>,
    pub name: Vec<u8>,
    pub fields: Vec<(String, Vec<u8>)>,
}

impl Payload {
    /// Sizes run from a few dozen bytes to about 6 KiB: mostly small, some
    /// medium, a few large, so commits straddle blocks and segments roll.
    pub fn new(salt: u64, index: u64) -> Payload {
        let h = mix(salt ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let size = match h % 100 {
            0..=69 => (h >> 8) % 200,
            70..=94 => 200 + (h >> 8) % 1800,
            _ => 2000 + (h >> 8) % 4000,
        } as usize;
        let kinds = [
            RecordType::CREAT,
            RecordType::UNLNK,
            RecordType::MKDIR,
            RecordType::DEVICE_ADD,
            RecordType::MOUNT_ATTACH,
            RecordType(200),
        ];
        let mut name = format!("i{index}-").into_bytes();
        name.extend_from_slice(&[0xff, 0xfe, b'/', 0]);
        Payload {
            kind: kinds[(h >> 40) as usize % kinds.len()],
            flags: (h >> 48) as u16,
            target: index.to_le_bytes().to_vec(),
            parent: salt.to_le_bytes().to_vec(),
            name,
            fields: vec![
                ("salt".into(), salt.to_be_bytes().to_vec()),
                ("blob".into(), bytes(h, size)),
            ],
        }
    }

    /// Calls `f` with the borrowed record.
    pub fn with<R>(&self, f: impl FnOnce(&Record<'_>) -> R) -> R {
        let fields: Vec<Field<'_>> = self
            .fields
            .iter()
            .map(|(k, v)| Field { key: k, value: v })
            .collect();
        let r = Record::new(self.kind)
            .flags(self.flags)
            .target(&self.target)
            .parent(&self.parent)
            .name(&self.name)
            .fields(&fields);
        f(&r)
    }

    /// Whether `rec` holds exactly this payload.
    pub fn matches(&self, rec: &LogRecord) -> bool {
        rec.kind == self.kind
            && rec.flags == self.flags
            && rec.target == self.target
            && rec.parent == self.parent
            && rec.name == self.name
            && rec.fields == self.fields
            && rec.time_ns != 0
    }
}

/// Reads every record of the log in `dir` from another "process" (no lock).
pub fn read_dir(dir: &Path) -> Vec<LogRecord> {
    Reader::open_dir(dir, 1)
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
}

/// Checks `recs` against the workload model: indexes 1..=len with no gap,
/// each record exactly `Payload::new(salt, index)`.
pub fn check_sequence(recs: &[LogRecord], salt: u64) {
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r.index, k as u64 + 1, "index out of sequence");
        assert!(
            Payload::new(salt, r.index).matches(r),
            "record {} is not what the workload wrote: {r:?}",
            r.index
        );
    }
}

/// Checks the log in `dir` against the workload model: indexes 1..=n with no
/// gap, each record exactly `Payload::new(salt, index)`, `n >= at_least`, and
/// `verify` clean. Returns `n`.
pub fn check_log(dir: &Path, salt: u64, at_least: u64) -> u64 {
    let recs = read_dir(dir);
    check_sequence(&recs, salt);
    let n = recs.len() as u64;
    assert!(
        n >= at_least,
        "lost acknowledged records: have 1..={n}, acknowledged up to {at_least}"
    );
    let v = weir_log::verify(&StdFs, dir, |_, _| {}).unwrap();
    assert!(v.problem.is_none(), "verify: {v:?}");
    assert_eq!(
        v.records, n,
        "verify counted another number of records: {v:?}"
    );
    n
}

/// Runs `f` on a thread and panics if it takes longer than `secs`: a guard
/// against writers blocked without bound, not a performance assertion.
pub fn within<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => {
            let _ = h.join();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => unreachable!("the closure returned without sending"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not finish within {secs} s"),
    }
}

/// Polls `f` every 20 ms until it returns true; fails after 10 s. For
/// what the committer does on its own time (retention every ~500 ms).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Appends `n` CREAT records of about 500 bytes and syncs; returns the
/// last index.
pub fn fill(log: &weir_log::Log, n: usize) -> u64 {
    let name = [b'r'; 500];
    for _ in 0..n {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&name))
            .unwrap();
    }
    log.sync().unwrap().unwrap().index()
}

/// Segment files of `dir`, sorted by name (= first index).
pub fn segment_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| weir_log::segment::parse_segment_name(p).is_some())
        .collect();
    v.sort();
    v
}

/// What the format rules say about one segment's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// `(offset, index, len)` of every valid frame, in order.
    pub frames: Vec<(u64, u64, usize)>,
    /// Where the valid records end.
    pub end: u64,
    /// The index after the last valid one.
    pub next_index: u64,
    /// Why the bytes at `end` are not the next record, if they are not
    /// unwritten space.
    pub cause: Option<DecodeError>,
    /// `(first, last)` offsets of non-zero bytes at or after `end`.
    pub nonzero_after: Option<(u64, u64)>,
}

impl Scan {
    /// Bytes recovery must report as dropped.
    pub fn dropped_bytes(&self) -> u64 {
        self.nonzero_after.map_or(0, |(a, b)| b + 1 - a)
    }

    /// Whether recovery must report a torn tail.
    pub fn torn(&self) -> bool {
        self.cause.is_some() || self.nonzero_after.is_some()
    }
}

fn align_up(x: u64) -> u64 {
    x.div_ceil(BLOCK) * BLOCK
}

/// Scans segment bytes per `docs/format.md`: frames in index order from the
/// header on; zeros at an unaligned offset (a zero length word, or zeros up
/// to a boundary less than a word away) are commit padding up to the next
/// 4 KiB boundary; anything else ends the valid data.
pub fn scan_segment(b: &[u8], base: u64) -> Scan {
    let len = b.len() as u64;
    let frame_at = |pos: u64, expected: u64| -> Result<usize, Option<DecodeError>> {
        if pos + 4 > len {
            return Err(None);
        }
        match codec::check_frame(&b[pos as usize..]) {
            Ok(f) if f.index == expected => Ok(f.len),
            Ok(f) => Err(Some(DecodeError::Gap {
                expected,
                found: f.index,
            })),
            Err(DecodeError::Zero) => Err(None),
            Err(e) => Err(Some(e)),
        }
    };
    let (mut pos, mut next) = (HEADER_LEN, base);
    let mut frames = Vec::new();
    let cause = loop {
        if pos >= len {
            break None;
        }
        match frame_at(pos, next) {
            Ok(n) => {
                frames.push((pos, next, n));
                pos += n as u64;
                next += 1;
            }
            // Padding may be shorter than a length word: then only the
            // bytes up to the boundary must be zero.
            Err(c)
                if !pos.is_multiple_of(BLOCK)
                    && align_up(pos) < len
                    && (c.is_none()
                        || b[pos as usize..align_up(pos).min(pos + 4) as usize]
                            .iter()
                            .all(|&x| x == 0)) =>
            {
                match frame_at(align_up(pos), next) {
                    Ok(n) => {
                        pos = align_up(pos);
                        frames.push((pos, next, n));
                        pos += n as u64;
                        next += 1;
                    }
                    Err(_) => break None,
                }
            }
            Err(c) => break c,
        }
    };
    let nz: Vec<usize> = (pos.min(len) as usize..b.len())
        .filter(|&k| b[k] != 0)
        .collect();
    Scan {
        frames,
        end: pos,
        next_index: next,
        cause,
        nonzero_after: nz.first().map(|&a| (a as u64, *nz.last().unwrap() as u64)),
    }
}

/// The parsed header of segment bytes, if valid.
pub fn header(b: &[u8]) -> Option<SegmentHeader> {
    SegmentHeader::decode(&b[..b.len().min(HEADER_LEN as usize)]).ok()
}

/// The footer of a segment file, if it is sealed with a valid footer.
pub fn footer(path: &Path) -> Option<weir_log::segment::Footer> {
    use weir_log::fs::FileSystem;
    let f = StdFs.open_read(path).ok()?;
    let len = f.len().ok()?;
    weir_log::segment::Footer::read(&*f, len).ok()??.ok()
}

/// Copies the regular files of `from` into `to` (created if needed).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// What recovery must do with the files left in `dir`, per [`predict`].
#[derive(Debug)]
pub struct Expect {
    pub next_index: u64,
    pub torn: Option<TornTail>,
    pub reset: Option<PathBuf>,
    pub sealed_tail: bool,
}

/// Predicts recovery from the bytes on disk: only the newest segment with a
/// valid header can be unsealed; its valid records end where the format
/// rules say; a newest segment with no valid record (no valid header, an
/// empty footer, or garbage where its first record should be) is reset to
/// an empty segment, and the next index is its name's.
pub fn predict(dir: &Path) -> Expect {
    let files = segment_files(dir);
    let mut e = Expect {
        next_index: 1,
        torn: None,
        reset: None,
        sealed_tail: false,
    };
    let Some(path) = files.last() else {
        return e;
    };
    let base = parse_segment_name(path).unwrap();
    e.next_index = base;
    let b = std::fs::read(path).unwrap();
    let Some(h) = header(&b) else {
        e.reset = Some(path.clone());
        return e;
    };
    assert_eq!(h.base_index, base, "{}", path.display());
    if let Some(f) = footer(path).filter(|f| f.first_index == base) {
        if f.last_index < base {
            e.reset = Some(path.clone());
        } else {
            e.next_index = f.last_index + 1;
        }
        return e;
    }
    let s = scan_segment(&b, base);
    if s.torn() {
        e.torn = Some(TornTail {
            path: path.clone(),
            valid_end: s.end,
            last_index: s.next_index - 1,
            dropped_bytes: s.dropped_bytes(),
            dropped_records: 0, // not modelled; checked separately
            cause: s.cause,
        });
    }
    if s.next_index == base && s.torn() {
        e.reset = Some(path.clone());
        return e;
    }
    e.next_index = s.next_index;
    e.sealed_tail = s.torn() || !s.end.is_multiple_of(BLOCK);
    e
}

/// Waits for `a` to become durable after a fault was healed: a wait that
/// began before the heal may still see the last retry fail, with an error
/// `retryable` accepts. Any other error, or ten retryable ones, fails the
/// test.
pub fn wait_until_durable(log: &Log, a: Appended, retryable: impl Fn(&Error) -> bool) {
    for _ in 0..10 {
        match log.wait_durable(a) {
            Ok(d) => return assert_eq!(d.index(), a.index()),
            Err(e) if retryable(&e) => continue,
            Err(e) => panic!("waiting for {}: {e}", a.index()),
        }
    }
    panic!(
        "record {} never became durable after the fault was healed",
        a.index()
    );
}
