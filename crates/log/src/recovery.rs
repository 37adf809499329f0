//! Recovery on open: find where the valid records end, scanning only the tail.
//!
//! Only the newest segment can be unsealed, because a segment is sealed
//! before its successor is created. Older segments are trusted by name and
//! checked when read. The tail is scanned up to the first bad CRC, gap or
//! unwritten space; anything after that is dropped and reported. A clean
//! tail ending on a block boundary is appended to again; any other tail is
//! truncated and sealed, so no later commit rewrites its last block.
//!
//! The newest segment file is never removed. Once retention has removed
//! the older segments, its name is the only record of the next index: a
//! tail that never got a valid header or holds no valid record is made an
//! empty segment again in place, and appends go on in it.

use std::io;
use std::path::{Path, PathBuf};

use crate::active::{ActiveSegment, IoFail};
use crate::catalog::SegEntry;
use crate::codec::{self, DecodeError};
use crate::error::{Error, Result};
use crate::fs::{File, FileSystem, read_full_at};
use crate::log::now_ns;
use crate::options::Options;
use crate::scan::{Scanner, Step};
use crate::segment::{
    self, BLOCK, FORMAT_VERSION, Footer, HEADER_LEN, SegmentHeader, align_up, parse_segment_name,
};

/// A torn tail that recovery dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment.
    pub path: PathBuf,
    /// Where the valid records end.
    pub valid_end: u64,
    /// The last valid index (`base - 1` if none).
    pub last_index: u64,
    /// Non-zero bytes found after `valid_end` and dropped.
    pub dropped_bytes: u64,
    /// Frames with a valid CRC found after `valid_end` and dropped (they
    /// follow a hole, so they were never acknowledged as durable).
    pub dropped_records: u64,
    /// Why the data at `valid_end` is not a record, if it is not clean.
    pub cause: Option<DecodeError>,
}

/// What recovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Segments in the log after recovery.
    pub segments: usize,
    /// The index the next append gets.
    pub next_index: u64,
    /// Bytes of the tail segment that were scanned.
    pub scanned_bytes: u64,
    /// The torn tail, if there was one.
    pub torn: Option<TornTail>,
    /// The tail segment, made an empty segment again in place because it
    /// never got a valid header or held no valid record. It is never
    /// removed: once retention has removed the older segments, its name is
    /// all that says which index comes next.
    pub reset: Option<PathBuf>,
    /// Whether the tail segment was sealed on open.
    pub sealed_tail: bool,
    /// `(expected, found)`: the segment before the tail ends before index
    /// `expected`, but the tail starts at `found`. The indexes between are
    /// missing (the log was damaged or tampered with); readers report the
    /// gap when they reach it, and appends go on after the tail.
    pub gap_before_tail: Option<(u64, u64)>,
}

/// The highest next index a log may open with. At ten million appends a
/// second a log reaches it after 14,000 years, so only a damaged or crafted
/// segment name or footer gives one above it; refusing it at open keeps
/// every index of the log below [`segment::MAX_INDEX`] (the highest a
/// segment name or footer may hold) without a check on each append.
const MAX_NEXT_INDEX: u64 = 1 << 62;

pub(crate) struct Recovered {
    pub(crate) segments: Vec<SegEntry>,
    pub(crate) active: Option<ActiveSegment>,
    pub(crate) next_index: u64,
    pub(crate) report: RecoveryReport,
}

/// Lists segment files of `dir`, sorted by first index.
pub(crate) fn list_segments(fs: &dyn FileSystem, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut v: Vec<(u64, PathBuf)> = fs
        .list(dir)?
        .into_iter()
        .filter_map(|p| parse_segment_name(&p).map(|b| (b, p)))
        .collect();
    v.sort();
    Ok(v)
}

pub(crate) fn recover(fs: &dyn FileSystem, dir: &Path, opts: &Options) -> Result<Recovered> {
    // A spare left by a crash holds no record; the committer makes a new
    // one if it uses spares.
    crate::spare::remove_stale(fs, dir);
    let mut names = list_segments(fs, dir).map_err(|e| Error::io("list", dir, e))?;
    let mut report = RecoveryReport::default();
    let mut next_index = 1;
    let mut active = None;
    let mut tail_entry = None;
    if let Some((base, path)) = names.pop() {
        let file = fs.open_rw(&path).map_err(|e| Error::io("open", &path, e))?;
        let header = SegmentHeader::read(&*file).map_err(|e| Error::io("read", &path, e))?;
        let tail = match header {
            Ok(h) => {
                check_header(&h, base, &path)?;
                recover_tail(fs, dir, opts, base, &path, file, &mut report)?
            }
            Err(_) => {
                // A crash between create and the header's fsync: no record
                // was ever written to this file, unless the header was
                // damaged later or is another version's.
                refuse_unknown_header(&*file, base, &path)?;
                reset(opts, base, &path, file, &mut report)?
            }
        };
        match tail {
            Tail::Sealed(entry) => {
                next_index = entry.last.map_or(base, |l| l + 1);
                tail_entry = Some(entry);
            }
            Tail::Active(a, entry) => {
                next_index = a.next_index();
                active = Some(a);
                tail_entry = Some(entry);
            }
        }
    }
    if let (Some((prev_base, prev)), Some(tail)) = (names.last(), &tail_entry) {
        report.gap_before_tail = gap_before(fs, *prev_base, prev, tail.base);
    }
    let mut segments = Vec::with_capacity(names.len() + 1);
    for (k, (base, path)) in names.iter().enumerate() {
        let next_base = names
            .get(k + 1)
            .map(|(b, _)| *b)
            .or(tail_entry.as_ref().map(|t: &SegEntry| t.base))
            .unwrap_or(next_index);
        let bytes = fs
            .open_read(path)
            .and_then(|f| f.len())
            .map_err(|e| Error::io("stat", path, e))?;
        segments.push(SegEntry {
            base: *base,
            path: path.clone(),
            last: Some(next_base - 1),
            bytes,
            last_time_ns: 0,
            time_read: false,
        });
    }
    if next_index > MAX_NEXT_INDEX {
        let path = tail_entry
            .as_ref()
            .map_or_else(|| dir.to_path_buf(), |t| t.path.clone());
        return Err(Error::Corrupt {
            path,
            offset: 0,
            kind: DecodeError::BadSegment(
                "the next index is past 2^62, which no log reaches by appending",
            ),
        });
    }
    // The tail may be a segment whose creation (or the spare's rename into
    // place) a killed writer never got to sync into the directory; the
    // durable commits about to go into it would be lost with its name.
    if tail_entry.is_some() {
        fs.sync_dir(dir).map_err(|e| Error::io("sync", dir, e))?;
    }
    segments.extend(tail_entry);
    report.segments = segments.len();
    report.next_index = next_index;
    if let Some((expected, found)) = report.gap_before_tail {
        tracing::error!(
            dir = %dir.display(), expected, found,
            "the tail segment does not follow the one before it: indexes are missing"
        );
    }
    if let Some(t) = &report.torn {
        tracing::warn!(
            segment = %t.path.display(), valid_end = t.valid_end, last_index = t.last_index,
            dropped_bytes = t.dropped_bytes, dropped_records = t.dropped_records,
            "recovery dropped a torn tail"
        );
    }
    Ok(Recovered {
        segments,
        active,
        next_index,
        report,
    })
}

/// Whether the sealed segment `prev` (first index `prev_base`) ends right
/// before `tail_base`, from its footer: `Some((expected, found))` if not.
/// A footer that cannot be read says nothing: older segments are checked
/// when read.
fn gap_before(
    fs: &dyn FileSystem,
    prev_base: u64,
    prev: &Path,
    tail_base: u64,
) -> Option<(u64, u64)> {
    let f = fs.open_read(prev).ok()?;
    let len = f.len().ok()?;
    let footer = Footer::read(&*f, len).ok()??.ok()?;
    let expected = footer.last_index + 1;
    (footer.first_index == prev_base && expected != tail_base).then_some((expected, tail_base))
}

fn check_header(h: &SegmentHeader, base: u64, path: &Path) -> Result<()> {
    h.ensure_supported(path)?;
    if h.base_index != base {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            offset: 16,
            kind: DecodeError::BadSegment("header index does not match the file name"),
        });
    }
    Ok(())
}

/// Refuses a tail whose header does not decode but which is not a
/// segment torn at its creation: one whose header names another format
/// version (a reader must refuse a version it does not know), or one whose
/// first record is valid (the header was damaged after records were
/// written). Resetting either would destroy records.
fn refuse_unknown_header(file: &dyn File, base: u64, path: &Path) -> Result<()> {
    let mut b = [0u8; 12];
    let n = read_full_at(file, &mut b, 0).map_err(|e| Error::io("read", path, e))?;
    if let Some(found) = SegmentHeader::peek_version(&b[..n])
        && found != FORMAT_VERSION
    {
        return Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            supported: FORMAT_VERSION,
        });
    }
    let len = file.len().map_err(|e| Error::io("stat", path, e))?;
    let mut sc = Scanner::new(file, HEADER_LEN, base, len);
    if let Step::Frame { .. } = sc.step().map_err(|e| Error::io("read", path, e))? {
        return Err(Error::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            kind: DecodeError::BadSegment("header damaged in a segment that holds records"),
        });
    }
    Ok(())
}

/// Makes the tail, which holds no valid record, an empty active segment
/// again (see [`ActiveSegment::reset`]).
fn reset(
    opts: &Options,
    base: u64,
    path: &Path,
    file: Box<dyn File>,
    report: &mut RecoveryReport,
) -> Result<Tail> {
    let a = ActiveSegment::reset(
        path.to_path_buf(),
        file,
        base,
        opts.segment_size,
        opts.max_data_end(),
        now_ns(),
    )
    .map_err(|e| Error::io("reset", path, e))?;
    tracing::info!(segment = %path.display(), next_index = base, "the tail segment held no valid record; reset it to an empty segment");
    report.reset = Some(path.to_path_buf());
    let entry = SegEntry {
        base,
        path: path.to_path_buf(),
        last: None,
        bytes: opts.segment_size,
        last_time_ns: 0,
        time_read: false,
    };
    Ok(Tail::Active(a, entry))
}

enum Tail {
    Sealed(SegEntry),
    Active(ActiveSegment, SegEntry),
}

fn recover_tail(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    base: u64,
    path: &Path,
    file: Box<dyn File>,
    report: &mut RecoveryReport,
) -> Result<Tail> {
    let io = |op| move |e| Error::io(op, path, e);
    let len = file.len().map_err(io("stat"))?;
    if let Some(Ok(f)) = Footer::read(&*file, len).map_err(io("read"))? {
        if f.first_index == base && f.last_index < base {
            // An empty sealed segment: appends go on in it.
            return reset(opts, base, path, file, report);
        }
        if f.first_index == base {
            return Ok(Tail::Sealed(SegEntry {
                base,
                path: path.to_path_buf(),
                last: Some(f.last_index),
                bytes: len,
                last_time_ns: f.last_time_ns,
                time_read: true,
            }));
        }
    }
    // Scan the records.
    let mut sc = Scanner::new(&*file, HEADER_LEN, base, len);
    let mut entries = Vec::new();
    let mut times = (0u64, 0u64);
    let mut next_stride = HEADER_LEN;
    let (valid_end, cause) = loop {
        match sc.step().map_err(io("read"))? {
            Step::Frame { offset, len } => {
                if offset >= next_stride || entries.is_empty() {
                    entries.push((sc.next_index() - 1, offset));
                    next_stride = segment::next_stride(offset);
                }
                let t = sc.frame(offset, len).map_err(io("read"))?.time_ns;
                if times.0 == 0 {
                    times.0 = t;
                }
                times.1 = t;
            }
            Step::End { offset, cause } => break (offset, cause),
        }
    };
    let next_index = sc.next_index();
    drop(sc);
    report.scanned_bytes += len;
    let (dropped_bytes, dropped_records) =
        garbage_after(&*file, valid_end, len).map_err(io("read"))?;
    let clean = dropped_bytes == 0 && cause.is_none();
    if !clean || valid_end % BLOCK != 0 {
        report.torn = Some(TornTail {
            path: path.to_path_buf(),
            valid_end,
            last_index: next_index - 1,
            dropped_bytes,
            dropped_records,
            cause,
        })
        .filter(|_| !clean);
    }
    if next_index == base && !clean {
        // No valid record at all: nothing to keep but the name.
        return reset(opts, base, path, file, report);
    }
    let mut entry = SegEntry {
        base,
        path: path.to_path_buf(),
        last: None,
        bytes: len,
        last_time_ns: times.1,
        time_read: false,
    };
    if clean && valid_end % BLOCK == 0 {
        // Synced before its records count as durable: a killed writer may
        // have left them in the page cache only.
        file.sync_data().map_err(io("sync"))?;
        let a = ActiveSegment::resume(
            path.to_path_buf(),
            file,
            next_index,
            opts.max_data_end().max(valid_end),
            valid_end,
            entries,
            times,
        );
        return Ok(Tail::Active(a, entry));
    }
    // Drop the torn bytes and seal, so nothing rewrites this tail.
    file.set_len(valid_end).map_err(io("truncate"))?;
    let mut a = ActiveSegment::resume(
        path.to_path_buf(),
        file,
        next_index,
        u64::MAX,
        valid_end,
        entries,
        times,
    );
    let sealed_len = a.seal(fs, dir).map_err(|f| match f {
        IoFail::Write(e) | IoFail::Sync(e) => Error::io("seal", path, e),
    })?;
    report.sealed_tail = true;
    entry.last = Some(next_index - 1);
    entry.bytes = sealed_len;
    Ok(Tail::Sealed(entry))
}

/// Counts non-zero bytes after `from`, and the valid frames among them.
pub(crate) fn garbage_after(file: &dyn File, from: u64, len: u64) -> io::Result<(u64, u64)> {
    let mut first_nz = None;
    let mut last_nz = 0;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = from;
    let mut frames = 0u64;
    while at < len {
        let n = read_full_at(file, &mut buf[..(len - at).min(1 << 20) as usize], at)?;
        if n == 0 {
            break;
        }
        for (k, &b) in buf[..n].iter().enumerate() {
            if b != 0 {
                first_nz.get_or_insert(at + k as u64);
                last_nz = at + k as u64;
            }
        }
        at += n as u64;
    }
    let Some(first) = first_nz else {
        return Ok((0, 0));
    };
    // Count chains of valid frames that start on block boundaries. Only
    // blocks up to the last non-zero byte can start one.
    let mut window = ProbeWindow::new(file, len);
    let mut b = align_up(from);
    while b <= last_nz {
        if let Some(index) = window.frame_index_at(b)? {
            let mut sc = Scanner::new(file, b, index, len);
            while let Step::Frame { .. } = sc.step()? {
                frames += 1;
            }
            b = align_up(sc.pos().max(b + 1));
        } else {
            b += BLOCK;
        }
    }
    Ok((last_nz + 1 - first, frames))
}

/// Reads the garbage after a tail through a window of [`PROBE_WINDOW`]
/// bytes when probing its blocks for frames. A hostile length word can
/// claim a frame of up to [`codec::MAX_FRAME`] bytes at every block;
/// reading each claim anew read the tail up to 256 times over, and the
/// window reads it about twice.
struct ProbeWindow<'f> {
    file: &'f dyn File,
    len: u64,
    start: u64,
    buf: Vec<u8>,
}

/// Twice the largest frame, so that a window moves on by at least one
/// largest frame.
const PROBE_WINDOW: usize = 2 * codec::MAX_FRAME;

impl<'f> ProbeWindow<'f> {
    fn new(file: &'f dyn File, len: u64) -> Self {
        ProbeWindow {
            file,
            len,
            start: 0,
            buf: Vec::new(),
        }
    }

    /// The bytes from `at` on, at least `want` of them where the file has
    /// them.
    fn bytes(&mut self, at: u64, want: usize) -> io::Result<&[u8]> {
        let end = self.start + self.buf.len() as u64;
        let covered = at >= self.start && (at + want as u64 <= end || end == self.len);
        if !covered || self.buf.is_empty() {
            let n = (self.len.saturating_sub(at)).min(PROBE_WINDOW as u64) as usize;
            self.buf.resize(n, 0);
            let got = read_full_at(self.file, &mut self.buf, at)?;
            self.buf.truncate(got);
            self.start = at;
        }
        let from = (at - self.start) as usize;
        Ok(&self.buf[from.min(self.buf.len())..])
    }

    /// The index of a valid frame that starts at `at`, if one does.
    fn frame_index_at(&mut self, at: u64) -> io::Result<Option<u64>> {
        let head = self.bytes(at, codec::HEADER_LEN)?;
        let Ok(flen) = codec::frame_len(head) else {
            return Ok(None);
        };
        let frame = self.bytes(at, flen)?;
        Ok(codec::check_frame(&frame[..flen.min(frame.len())])
            .ok()
            .map(|f| f.index))
    }
}
