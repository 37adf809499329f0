//! A read-only, lock-free summary of a log directory, for tools such as
//! `weir log stats` that run beside the writer in another process.
//!
//! It trusts segment names for everything but the tail: the first index is
//! the oldest segment's base, and the last index comes from the newest
//! segment's footer or, when that segment is still being written, from a
//! scan of its valid frames. Durability is unknown from outside the writer.

use std::io;
use std::path::Path;

use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::recovery::list_segments;
use crate::scan::{Scanner, Step};
use crate::segment::{Footer, HEADER_LEN, SegmentHeader};

/// What [`inspect`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Segment files.
    pub segments: usize,
    /// Total segment file length (the active segment counts at its
    /// preallocated size).
    pub bytes: u64,
    /// Bytes allocated on disk for the segments (`st_blocks * 512`).
    pub allocated: u64,
    /// The length of the spare segment file, the next segment zero-filled
    /// ahead of its roll or kept by the last clean close (0 if none; see
    /// [`Preallocation`](crate::Preallocation)). It counts towards the size
    /// limit but holds no record.
    pub spare_bytes: u64,
    /// The oldest index still in the log (1 for an empty directory).
    pub first_index: u64,
    /// The last index found; `first_index - 1` when the log holds no record.
    pub last_index: u64,
    /// Whether the newest segment is sealed (the writer is not appending to it).
    pub tail_sealed: bool,
}

impl Summary {
    /// Records in the log.
    pub fn records(&self) -> u64 {
        (self.last_index + 1).saturating_sub(self.first_index)
    }
}

/// Summarizes the log in `dir` without taking its lock. A concurrent writer
/// may append or remove segments meanwhile; the summary is a snapshot that
/// may be slightly stale, never an error because of that.
pub fn inspect(fs: &dyn FileSystem, dir: &Path) -> Result<Summary> {
    let segs = list_segments(fs, dir).map_err(|e| Error::io("list", dir, e))?;
    let mut s = Summary {
        segments: 0,
        bytes: 0,
        allocated: 0,
        spare_bytes: crate::spare::on_disk(fs, dir).map_err(|e| Error::io("stat", dir, e))?,
        first_index: segs.first().map_or(1, |(b, _)| (*b).max(1)),
        last_index: 0,
        tail_sealed: false,
    };
    let mut tail = None;
    for (base, path) in &segs {
        let f = match fs.open_read(path) {
            Ok(f) => f,
            // Garbage-collected since the listing.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("open", path, e)),
        };
        let len = f.len().map_err(|e| Error::io("stat", path, e))?;
        s.segments += 1;
        s.bytes += len;
        s.allocated += f.allocated().map_err(|e| Error::io("stat", path, e))?;
        if s.segments == 1 {
            s.first_index = (*base).max(1);
        }
        tail = Some((*base, path, f, len));
    }
    let Some((base, path, f, len)) = tail else {
        s.last_index = s.first_index - 1;
        return Ok(s);
    };
    let read_err = |e| Error::io("read", path, e);
    // A segment being created right now has no valid header yet; its
    // predecessor, sealed, ends just before its base.
    if !matches!(SegmentHeader::read(&*f).map_err(read_err)?, Ok(h) if h.base_index == base) {
        s.last_index = base - 1;
        return Ok(s);
    }
    if let Some(Ok(footer)) = Footer::read(&*f, len).map_err(read_err)? {
        s.tail_sealed = true;
        s.last_index = footer.last_index;
        return Ok(s);
    }
    let mut sc = Scanner::new(&*f, HEADER_LEN, base, len);
    // Anything after the valid frames is, to an outside reader, not yet
    // written: the writer's recovery decides what it was.
    while let Step::Frame { .. } = sc.step().map_err(read_err)? {}
    s.last_index = sc.next_index() - 1;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;
    use crate::{Log, Options, Record, RecordType};

    #[test]
    fn empty_and_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = inspect(&StdFs, dir.path()).unwrap();
        assert_eq!(
            (s.segments, s.first_index, s.last_index, s.records()),
            (0, 1, 0, 0)
        );

        let log = Log::open(dir.path(), Options::default()).unwrap();
        for k in 0..37u32 {
            let _ = log
                .append(&Record::new(RecordType::CREAT).name(&k.to_le_bytes()))
                .unwrap();
        }
        log.sync().unwrap();
        let s = inspect(&StdFs, dir.path()).unwrap();
        assert_eq!((s.first_index, s.last_index, s.records()), (1, 37, 37));
        assert!(s.segments >= 1 && s.bytes > 0);
        log.close().unwrap();
        let s = inspect(&StdFs, dir.path()).unwrap();
        assert_eq!(s.last_index, 37);
    }
}
