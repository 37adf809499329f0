//! Full verification of a log directory: every CRC, index continuity within
//! and across segments, every footer (its indexes, its place and each
//! sparse-index entry), and what lies past the records of the unsealed tail.
//!
//! Verify takes no lock, so a writer may append to the tail or seal it
//! while verify reads it. Before it calls bytes after the tail's records a
//! problem, verify looks again: records completed there since its scan
//! passed are checked and counted, a footer for exactly the records before
//! it is a seal under way, and a seal finished since is checked as such.

use std::io;
use std::path::{Path, PathBuf};

use crate::codec::DecodeError;
use crate::error::{Error, Result};
use crate::fs::{File, FileSystem, read_full_at};
use crate::recovery::{garbage_after, list_segments};
use crate::scan::{Scanner, Step};
use crate::segment::{
    FTR_MAGIC, Footer, HEADER_LEN, MAX_FOOTER, SegmentHeader, TRAILER_LEN, align_up,
};

/// Non-zero bytes after the end of the tail's valid records. They follow a
/// hole, so the next open takes them for a torn tail and drops them, with
/// any records among them.
const DATA_AFTER_END: DecodeError =
    DecodeError::BadSegment("data after the end of the records (the next open drops it)");

/// The first problem `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The segment.
    pub path: PathBuf,
    /// Byte offset of the bad data: where the valid records end, or the
    /// footer field that is wrong.
    pub offset: u64,
    /// The index expected there (for a sparse-index entry, its index).
    pub index: u64,
    /// What is wrong.
    pub kind: DecodeError,
}

/// What `verify` found. With a problem, the figures count what was checked
/// before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Segments checked, the one with the problem included.
    pub segments: usize,
    /// Records checked and found valid.
    pub records: u64,
    /// The first index.
    pub first_index: u64,
    /// The last index checked and found valid (`first_index - 1` if none).
    pub last_index: u64,
    /// Bytes checked: the segments checked whole, and the bytes before the
    /// problem in the segment that has it.
    pub bytes: u64,
    /// The first problem, if any.
    pub problem: Option<Problem>,
}

/// Checks every record of the log in `dir`. `progress` is called with bytes
/// done and bytes in total.
pub fn verify(
    fs: &dyn FileSystem,
    dir: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<VerifyReport> {
    let segs = list_segments(fs, dir).map_err(|e| Error::io("list", dir, e))?;
    let mut files = Vec::with_capacity(segs.len());
    let mut total = 0;
    for (base, path) in &segs {
        let f = fs.open_read(path).map_err(|e| Error::io("open", path, e))?;
        let len = f.len().map_err(|e| Error::io("stat", path, e))?;
        total += len;
        files.push((*base, path.clone(), f, len));
    }
    let mut rep = VerifyReport {
        first_index: segs.first().map_or(0, |s| s.0),
        ..VerifyReport::default()
    };
    let mut expected = rep.first_index;
    let mut done = 0;
    let count = files.len();
    for (k, (base, path, f, len)) in files.into_iter().enumerate() {
        rep.segments += 1;
        let c = if base != expected {
            let mut c = Checked::new(expected);
            c.fail(
                0,
                expected,
                DecodeError::Gap {
                    expected,
                    found: base,
                },
            );
            c
        } else {
            Segment {
                file: &*f,
                path: &path,
                base,
                progress: &mut |at| progress(done + at, total),
                last_report: 0,
            }
            .check(len, k + 1 == count)?
        };
        rep.records += c.records;
        rep.last_index = c.next_index.saturating_sub(1);
        if let Some((offset, index, kind)) = c.problem {
            rep.bytes = done + c.bytes;
            rep.problem = Some(Problem {
                path,
                offset,
                index,
                kind,
            });
            return Ok(rep);
        }
        expected = c.next_index;
        done += c.bytes;
        rep.bytes = done;
        progress(done, total);
    }
    rep.last_index = expected.saturating_sub(1);
    Ok(rep)
}

/// What checking one segment found.
struct Checked {
    /// The index after the last valid record.
    next_index: u64,
    /// Valid records.
    records: u64,
    /// The file's length, or the bytes before the problem.
    bytes: u64,
    /// `(offset, index, kind)` of the first problem.
    problem: Option<(u64, u64, DecodeError)>,
}

impl Checked {
    fn new(base: u64) -> Checked {
        Checked {
            next_index: base,
            records: 0,
            bytes: 0,
            problem: None,
        }
    }

    fn fail(&mut self, offset: u64, index: u64, kind: DecodeError) {
        self.problem = Some((offset, index, kind));
    }
}

/// One segment being checked.
struct Segment<'a> {
    file: &'a dyn File,
    path: &'a Path,
    base: u64,
    /// Called with the offset reached in this segment.
    progress: &'a mut dyn FnMut(u64),
    last_report: u64,
}

/// Where the first-index field sits in a footer (docs/format.md, "Footer
/// and trailer").
const FOOTER_FIRST_INDEX: u64 = 8;

impl Segment<'_> {
    fn io(&self, e: io::Error) -> Error {
        Error::io("read", self.path, e)
    }

    /// A valid record at `offset`: counts it and reports progress.
    fn record(&mut self, c: &mut Checked, offset: u64, next_index: u64) {
        c.records += 1;
        c.next_index = next_index;
        if offset.saturating_sub(self.last_report) >= 4 << 20 {
            (self.progress)(offset);
            self.last_report = offset;
        }
    }

    fn check(&mut self, len: u64, newest: bool) -> Result<Checked> {
        let mut c = Checked::new(self.base);
        match SegmentHeader::read(self.file).map_err(|e| self.io(e))? {
            Ok(h) => {
                h.ensure_supported(self.path)?;
                if h.base_index != self.base {
                    c.fail(16, self.base, DecodeError::BadSegment("header index"));
                    return Ok(c);
                }
            }
            Err(e) => {
                c.fail(0, self.base, e);
                return Ok(c);
            }
        }
        match Footer::read(self.file, len).map_err(|e| self.io(e))? {
            Some(Ok(ft)) => self.sealed(len, &ft),
            Some(Err(e)) => {
                c.fail(len, self.base, e);
                Ok(c)
            }
            // Segments are sealed before their successor is created.
            None if !newest => {
                c.fail(len, self.base, DecodeError::BadSegment("not sealed"));
                Ok(c)
            }
            None => self.tail(len),
        }
    }

    /// Checks a sealed segment of `len` bytes against its footer `ft`.
    fn sealed(&mut self, len: u64, ft: &Footer) -> Result<Checked> {
        let mut c = Checked::new(self.base);
        let bad = DecodeError::BadSegment;
        // `Footer::read` found the footer right before the end.
        let at = len - ft.encoded_len();
        if ft.first_index != self.base {
            c.fail(
                at + FOOTER_FIRST_INDEX,
                self.base,
                bad("footer first index is not the segment's"),
            );
            return Ok(c);
        }
        // The writer pads the records to a block boundary and writes the
        // footer there, so that no later write touches the records' blocks.
        if at != align_up(ft.data_end) {
            c.fail(
                at,
                self.base,
                bad("footer not at the first block boundary after the records"),
            );
            return Ok(c);
        }
        let mut sc = Scanner::new(self.file, HEADER_LEN, self.base, ft.data_end);
        let mut entries = ft.entries.iter().enumerate().peekable();
        loop {
            match sc.step().map_err(|e| self.io(e))? {
                Step::Frame { offset, .. } => {
                    let index = sc.next_index() - 1;
                    self.record(&mut c, offset, index + 1);
                    // Entries are strictly increasing, so each is met at
                    // the record with its index, if that record exists.
                    if let Some(&(k, &(i, o))) = entries.peek()
                        && i == index
                    {
                        if o != offset {
                            c.bytes = offset;
                            c.fail(
                                at + Footer::len_for(k) - TRAILER_LEN,
                                index,
                                bad("sparse-index entry does not point at its record"),
                            );
                            return Ok(c);
                        }
                        entries.next();
                    }
                }
                Step::End { offset, cause } => {
                    c.next_index = sc.next_index();
                    c.bytes = offset;
                    if let Some(cause) = cause {
                        c.fail(offset, c.next_index, cause);
                    } else if ft.last_index + 1 != c.next_index || offset != ft.data_end {
                        c.fail(
                            offset,
                            c.next_index,
                            bad("footer does not match the records"),
                        );
                    } else {
                        c.bytes = len;
                    }
                    return Ok(c);
                }
            }
        }
    }

    /// Checks the unsealed tail of `len` bytes, as recovery would see it:
    /// its records, then nothing but zeros after them.
    fn tail(&mut self, len: u64) -> Result<Checked> {
        let mut c = Checked::new(self.base);
        let mut sc = Scanner::new(self.file, HEADER_LEN, self.base, len);
        loop {
            let (end, cause) = match sc.step().map_err(|e| self.io(e))? {
                Step::Frame { offset, .. } => {
                    self.record(&mut c, offset, sc.next_index());
                    continue;
                }
                Step::End { offset, cause } => (offset, cause),
            };
            c.next_index = sc.next_index();
            c.bytes = end;
            // A writer may have sealed the tail since it was opened.
            let now = self.file.len().map_err(|e| self.io(e))?;
            if let Some(Ok(ft)) = Footer::read(self.file, now).map_err(|e| self.io(e))? {
                self.last_report = 0;
                return self.sealed(now, &ft);
            }
            let (after, _) = garbage_after(self.file, end, now).map_err(|e| self.io(e))?;
            if cause.is_none() && after == 0 {
                c.bytes = now;
                return Ok(c);
            }
            // A writer may have appended since the scan passed the end:
            // reading the rest took a while. Go on with its records.
            let mut again = Scanner::new(self.file, end, c.next_index, now);
            if let Step::Frame { offset, .. } = again.step().map_err(|e| self.io(e))? {
                self.record(&mut c, offset, again.next_index());
                sc = again;
                continue;
            }
            if self.seal_under_way(end, c.next_index, now)? {
                c.bytes = now;
                return Ok(c);
            }
            c.fail(end, c.next_index, cause.unwrap_or(DATA_AFTER_END));
            return Ok(c);
        }
    }

    /// Whether the bytes after the records, which end at `end` before
    /// `next_index`, are a valid footer for exactly those records at the
    /// next block boundary, with zeros before and after it: a writer that
    /// has written its footer and not yet truncated the file. (A crash
    /// there leaves the same bytes; the next open then drops no record.)
    fn seal_under_way(&self, end: u64, next_index: u64, len: u64) -> Result<bool> {
        let io = |e| self.io(e);
        let at = align_up(end);
        let mut fixed = [0u8; (Footer::len_for(0) - TRAILER_LEN) as usize];
        if read_full_at(self.file, &mut fixed, at).map_err(io)? < fixed.len() {
            return Ok(false);
        }
        // The entry count (docs/format.md, "Footer and trailer").
        let entries = u32::from_le_bytes([fixed[48], fixed[49], fixed[50], fixed[51]]);
        let flen = Footer::len_for(entries as usize);
        // Any bytes may stand here: without these checks a count from a
        // hostile tail had this allocate up to 64 GiB.
        if &fixed[0..8] != FTR_MAGIC || flen > MAX_FOOTER || at + flen > len {
            return Ok(false);
        }
        let mut b = vec![0u8; flen as usize];
        if read_full_at(self.file, &mut b, at).map_err(io)? < b.len() {
            return Ok(false);
        }
        let Ok(ft) = Footer::decode(&b, at) else {
            return Ok(false);
        };
        Ok(ft.first_index == self.base
            && ft.last_index + 1 == next_index
            && ft.data_end == end
            && garbage_after(self.file, end, at).map_err(io)?.0 == 0
            && garbage_after(self.file, at + flen, len).map_err(io)?.0 == 0)
    }
}
