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
            let n = want.max(CHUNK).min(self.limit.saturating_sub(at) as usize);
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
