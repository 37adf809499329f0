//! Full verification of a log directory: every CRC, index continuity within
//! and across segments, and every footer.

use std::path::{Path, PathBuf};

use crate::codec::DecodeError;
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::recovery::list_segments;
use crate::scan::{Scanner, Step};
use crate::segment::{Footer, HEADER_LEN, SegmentHeader};

/// The first problem `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The segment.
    pub path: PathBuf,
    /// Byte offset of the bad data.
    pub offset: u64,
    /// The index expected there.
    pub index: u64,
    /// What is wrong.
    pub kind: DecodeError,
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Segments checked.
    pub segments: usize,
    /// Records checked.
    pub records: u64,
    /// The first index.
    pub first_index: u64,
    /// The last index.
    pub last_index: u64,
    /// Bytes scanned.
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
        segments: segs.len(),
        first_index: segs.first().map_or(0, |s| s.0),
        ..VerifyReport::default()
    };
    let mut expected = rep.first_index;
    let mut done = 0;
    let count = files.len();
    for (k, (base, path, f, len)) in files.into_iter().enumerate() {
        let problem = |offset, index, kind| Problem {
            path: path.clone(),
            offset,
            index,
            kind,
        };
        if base != expected {
            rep.problem = Some(problem(
                0,
                expected,
                DecodeError::Gap {
                    expected,
                    found: base,
                },
            ));
            return Ok(rep);
        }
        match SegmentHeader::read(&*f).map_err(|e| Error::io("read", &path, e))? {
            Ok(h) => {
                h.ensure_supported(&path)?;
                if h.base_index != base {
                    rep.problem = Some(problem(
                        16,
                        expected,
                        DecodeError::BadSegment("header index"),
                    ));
                    return Ok(rep);
                }
            }
            Err(e) => {
                rep.problem = Some(problem(0, expected, e));
                return Ok(rep);
            }
        }
        let footer = match Footer::read(&*f, len).map_err(|e| Error::io("read", &path, e))? {
            Some(Ok(ft)) => Some(ft),
            Some(Err(e)) => {
                rep.problem = Some(problem(len, expected, e));
                return Ok(rep);
            }
            None if k + 1 < count => {
                rep.problem = Some(problem(
                    len,
                    expected,
                    DecodeError::BadSegment("not sealed"),
                ));
                return Ok(rep);
            }
            None => None,
        };
        let limit = footer.as_ref().map_or(len, |ft| ft.data_end);
        let mut sc = Scanner::new(&*f, HEADER_LEN, base, limit);
        let mut last_report = 0;
        let (end, cause) = loop {
            match sc.step().map_err(|e| Error::io("read", &path, e))? {
                Step::Frame { offset, .. } => {
                    rep.records += 1;
                    if offset - last_report >= 4 << 20 {
                        progress(done + offset, total);
                        last_report = offset;
                    }
                }
                Step::End { offset, cause } => break (offset, cause),
            }
        };
        expected = sc.next_index();
        if let Some(c) = cause {
            rep.problem = Some(problem(end, expected, c));
            return Ok(rep);
        }
        if let Some(ft) = &footer
            && (ft.last_index + 1 != expected || end != ft.data_end)
        {
            rep.problem = Some(problem(
                end,
                expected,
                DecodeError::BadSegment("footer does not match the records"),
            ));
            return Ok(rep);
        }
        done += len;
        rep.bytes = done;
        progress(done, total);
    }
    rep.last_index = expected.saturating_sub(1);
    Ok(rep)
}
