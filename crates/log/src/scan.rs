//! Sequential frame scanning over one segment file.
//!
//! The scanner applies the layout rules of `docs/format.md`: zeros at an
//! unaligned offset (a zero length word, or zeros up to the boundary when it
//! is less than a word away) are padding up to the next 4 KiB boundary, and a
//! frame is accepted only if its CRC holds and its index is the next one
//! expected. Recovery, readers and `verify` all use it, so they agree on
//! where the valid records of a segment end.

use std::io;

use crate::codec::{self, DecodeError, FrameRef};
use crate::fs::{File, read_full_at};
use crate::segment::{BLOCK, align_up};

/// A scan's first read, doubled at each refill up to [`CHUNK`]. A reader
/// that follows the log scans from the tail of a preallocated segment
/// dozens of times a second: a full chunk per scan would read (and copy)
/// 256 KiB of unwritten space each time to find a few new records.
const FIRST_CHUNK: usize = 16 * 1024;
const CHUNK: usize = 256 * 1024;

/// One step of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// A valid frame at `offset` of `len` bytes; see [`Scanner::frame`].
    Frame {
        /// Offset of the frame.
        offset: u64,
        /// Its length.
        len: usize,
    },
    /// No valid frame at `offset`.
    End {
        /// Where the valid data ends.
        offset: u64,
        /// `None` for a clean end (unwritten space or the limit), otherwise
        /// why the bytes there are not the next record.
        cause: Option<DecodeError>,
    },
}

/// Scans frames of a segment from a starting offset and index.
pub(crate) struct Scanner<'f> {
    file: &'f dyn File,
    buf: Vec<u8>,
    buf_off: u64,
    /// The size of the next read.
    chunk: usize,
    pos: u64,
    limit: u64,
    next_index: u64,
}

impl<'f> Scanner<'f> {
    /// A scanner that expects `next_index` at `pos` and reads no byte at or
    /// past `limit`.
    pub(crate) fn new(file: &'f dyn File, pos: u64, next_index: u64, limit: u64) -> Self {
        Scanner {
            file,
            buf: Vec::new(),
            buf_off: 0,
            chunk: FIRST_CHUNK,
            pos,
            limit,
            next_index,
        }
    }

    /// The offset of the next frame.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// The index expected next.
    pub(crate) fn next_index(&self) -> u64 {
        self.next_index
    }

    fn window(&mut self, at: u64, want: usize) -> io::Result<&[u8]> {
        let end = (at + want as u64).min(self.limit);
        let want = end.saturating_sub(at) as usize;
        let cached = at >= self.buf_off && end <= self.buf_off + self.buf.len() as u64;
        if !cached {
            let n = want
                .max(self.chunk)
                .min(self.limit.saturating_sub(at) as usize);
            self.chunk = (self.chunk * 2).min(CHUNK);
            self.buf.resize(n, 0);
            let got = read_full_at(self.file, &mut self.buf, at)?;
            self.buf.truncate(got);
            self.buf_off = at;
        }
        let s = (at - self.buf_off) as usize;
        let e = (s + want).min(self.buf.len());
        Ok(&self.buf[s..e])
    }

    fn frame_at(&mut self, at: u64) -> io::Result<Result<FrameRef<'_>, DecodeError>> {
        let head = self.window(at, 4)?;
        let len = match codec::frame_len(head) {
            Ok(len) => len,
            Err(e) => return Ok(Err(e)),
        };
        let w = self.window(at, len)?;
        Ok(codec::check_frame(w))
    }

    /// Advances to the next frame or reports where the valid data ends.
    pub(crate) fn step(&mut self) -> io::Result<Step> {
        let at = self.pos;
        let expected = self.next_index;
        let limit = self.limit;
        if at >= limit {
            return Ok(self.end(at, None));
        }
        let outcome = match self.frame_at(at)? {
            Ok(f) if f.index == expected => Ok(f.len),
            Ok(f) => Err(Some(DecodeError::Gap {
                expected,
                found: f.index,
            })),
            Err(DecodeError::Zero) => Err(None),
            Err(DecodeError::Truncated { .. }) if at + 4 > limit => Err(None),
            Err(e) => Err(Some(e)),
        };
        match outcome {
            Ok(len) => {
                self.pos = at + len as u64;
                self.next_index += 1;
                Ok(Step::Frame { offset: at, len })
            }
            // Zeros at an unaligned offset may be commit padding: the next
            // record then starts at the boundary. Padding can be shorter
            // than a length word (1 to 3 bytes), whose last bytes then lie
            // in the next block: only the bytes up to the boundary count.
            Err(cause)
                if !at.is_multiple_of(BLOCK)
                    && align_up(at) < self.limit
                    && (cause.is_none() || self.zero_to_boundary(at)?) =>
            {
                let b = align_up(at);
                match self.frame_at(b)? {
                    Ok(f) if f.index == expected => {
                        let len = f.len;
                        self.pos = b + len as u64;
                        self.next_index += 1;
                        Ok(Step::Frame { offset: b, len })
                    }
                    _ => Ok(self.end(at, None)),
                }
            }
            Err(cause) => Ok(self.end(at, cause)),
        }
    }

    /// Whether the bytes from `at` to the next boundary, or its first
    /// four if the boundary is further, are all zero.
    fn zero_to_boundary(&mut self, at: u64) -> io::Result<bool> {
        let n = (align_up(at) - at).min(4) as usize;
        let w = self.window(at, n)?;
        Ok(w.len() == n && w.iter().all(|&b| b == 0))
    }

    fn end(&mut self, offset: u64, cause: Option<DecodeError>) -> Step {
        // Space past the end may be written later; never serve it from cache.
        self.buf.clear();
        Step::End { offset, cause }
    }

    /// The bytes of the frame returned by the last [`Step::Frame`].
    pub(crate) fn frame(&mut self, offset: u64, len: usize) -> io::Result<FrameRef<'_>> {
        // The window is still cached from `step`, which checked the CRC.
        let w = self.window(offset, len)?;
        Ok(codec::trusted_frame(w))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::kind::RecordType;
    use crate::record::Record;

    /// A file in memory that keeps the size of every read.
    #[derive(Debug)]
    struct Recorded {
        data: Vec<u8>,
        reads: Mutex<Vec<usize>>,
    }

    fn unsupported() -> io::Error {
        io::Error::from(io::ErrorKind::Unsupported)
    }

    impl File for Recorded {
        fn write_at(&self, _: &[u8], _: u64) -> io::Result<usize> {
            Err(unsupported())
        }
        fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
            self.reads.lock().unwrap().push(buf.len());
            let at = usize::try_from(off).unwrap().min(self.data.len());
            let n = buf.len().min(self.data.len() - at);
            buf[..n].copy_from_slice(&self.data[at..at + n]);
            Ok(n)
        }
        fn sync_data(&self) -> io::Result<()> {
            Err(unsupported())
        }
        fn sync_all(&self) -> io::Result<()> {
            Err(unsupported())
        }
        fn allocate(&self, _: u64) -> io::Result<()> {
            Err(unsupported())
        }
        fn set_len(&self, _: u64) -> io::Result<()> {
            Err(unsupported())
        }
        fn len(&self) -> io::Result<u64> {
            Ok(self.data.len() as u64)
        }
        fn allocated(&self) -> io::Result<u64> {
            Ok(self.data.len() as u64)
        }
    }

    /// `records` frames of a 100-byte name from index 1, then zeros up to
    /// `len` bytes (a preallocated segment's unwritten space).
    fn segment(records: u64, len: usize) -> Recorded {
        let mut data = Vec::new();
        let name = [b'n'; 100];
        for i in 1..=records {
            let r = Record::new(RecordType::CREAT).name(&name);
            data.extend(codec::encode(&r, i, i).unwrap());
        }
        assert!(data.len() <= len);
        data.resize(len, 0);
        Recorded {
            data,
            reads: Mutex::new(Vec::new()),
        }
    }

    fn scan_all(f: &Recorded) -> u64 {
        let mut sc = Scanner::new(f, 0, 1, f.data.len() as u64);
        let mut frames = 0;
        while let Step::Frame { .. } = sc.step().unwrap() {
            frames += 1;
        }
        frames
    }

    #[test]
    fn a_scan_at_the_tail_of_a_preallocated_segment_reads_only_a_little() {
        let f = segment(20, 8 << 20);
        assert_eq!(scan_all(&f), 20);
        let reads = f.reads.lock().unwrap();
        let total: usize = reads.iter().sum();
        assert!(
            total <= 2 * FIRST_CHUNK,
            "read {total} B in {reads:?} to find 20 records"
        );
    }

    #[test]
    fn a_long_scan_grows_its_reads_to_a_full_chunk() {
        let f = segment(20_000, 4 << 20);
        assert_eq!(scan_all(&f), 20_000);
        let reads = f.reads.lock().unwrap();
        assert_eq!(reads[0], FIRST_CHUNK);
        assert_eq!(reads.iter().max(), Some(&CHUNK));
        // The frames' 3 MiB or so in 256 KiB reads, and the few smaller
        // ones before them.
        assert!(reads.len() <= 4 * 1024 * 1024 / CHUNK + 6, "{reads:?}");
    }
}
