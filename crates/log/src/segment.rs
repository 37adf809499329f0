//! Segment files: naming, the 4 KiB header, and the footer written at seal.
//!
//! A segment is preallocated to a fixed size and filled front to back. Its
//! header takes a whole 4 KiB block so that the first commit never touches
//! a block already on disk. Sealing writes a footer with a sparse index at
//! the next 4 KiB boundary after the data and trims the unused preallocation;
//! a trailer in the last 24 bytes marks the segment as sealed.

use std::io;
use std::path::{Path, PathBuf};

use crate::codec::DecodeError;
use crate::fs::{File, read_full_at};

/// The commit alignment: every durable commit ends on this boundary.
pub const BLOCK: u64 = 4096;
/// The on-disk format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes taken by the segment header.
pub const HEADER_LEN: u64 = BLOCK;
/// One sparse-index entry is kept for every this many bytes of records.
pub const INDEX_STRIDE: u64 = 64 * 1024;
/// Bytes in the trailer at the end of a sealed segment.
pub const TRAILER_LEN: u64 = 24;
const FOOTER_FIXED: u64 = 56;
/// Where the stretch after the one holding offset `at` begins: the sparse
/// index holds the first record of each [`INDEX_STRIDE`] stretch.
pub(crate) fn next_stride(at: u64) -> u64 {
    at - at % INDEX_STRIDE + INDEX_STRIDE
}

/// The largest segment a log may be configured with. Its footer (one
/// sparse-index entry per [`INDEX_STRIDE`]) stays far below
/// `MAX_FOOTER`, the most a reader takes in.
pub const MAX_SEGMENT: u64 = 64 << 30;
/// The largest footer (with trailer) a reader reads: a bound on what a
/// hostile trailer can make it allocate.
pub(crate) const MAX_FOOTER: u64 = 64 << 20;
const _: () = assert!(Footer::len_for((MAX_SEGMENT / INDEX_STRIDE + 2) as usize) <= MAX_FOOTER);
/// The largest record index the format admits: indexes start at 1 and stay
/// below 2^63, so that `index + 1` and `base - 1` never wrap, whatever a
/// hostile file name or footer says (the ring also keeps bit 63 for a flag).
pub const MAX_INDEX: u64 = (1 << 63) - 1;

const SEG_MAGIC: &[u8; 8] = b"WEIRSEG\0";
pub(crate) const FTR_MAGIC: &[u8; 8] = b"WEIRFTR\0";
const END_MAGIC: &[u8; 8] = b"WEIREND\0";
const EXTENSION: &str = "wlog";

/// The path of the segment whose first index is `base`.
pub fn segment_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.{EXTENSION}"))
}

/// The first index encoded in a segment file name, if `path` names a
/// segment: 20 digits of an index from 1 to [`MAX_INDEX`], then `.wlog`.
pub fn parse_segment_name(path: &Path) -> Option<u64> {
    if path.extension()? != EXTENSION {
        return None;
    }
    let stem = path.file_stem()?.to_str()?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok().filter(|b| (1..=MAX_INDEX).contains(b))
}

/// The fixed header at the start of every segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Format version.
    pub version: u32,
    /// The index of the first record in the segment.
    pub base_index: u64,
    /// The preallocated size.
    pub capacity: u64,
    /// Creation time, ns since the epoch.
    pub created_ns: u64,
}

impl SegmentHeader {
    /// The header block (4 KiB, zero-padded).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN as usize];
        b[0..8].copy_from_slice(SEG_MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.base_index.to_le_bytes());
        b[24..32].copy_from_slice(&self.capacity.to_le_bytes());
        b[32..40].copy_from_slice(&self.created_ns.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..40]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a header block.
    pub fn decode(b: &[u8]) -> Result<SegmentHeader, DecodeError> {
        if b.len() < 44 || &b[0..8] != SEG_MAGIC {
            return Err(DecodeError::BadSegment("header magic"));
        }
        if crc32c::crc32c(&b[0..40]) != le32(b, 40) {
            return Err(DecodeError::BadSegment("header CRC"));
        }
        if le32(b, 12) as u64 != HEADER_LEN {
            return Err(DecodeError::BadSegment("header length"));
        }
        Ok(SegmentHeader {
            version: le32(b, 8),
            base_index: le64(b, 16),
            capacity: le64(b, 24),
            created_ns: le64(b, 32),
        })
    }

    /// Refuses a format version this build does not read.
    pub fn ensure_supported(&self, path: &Path) -> Result<(), crate::Error> {
        if self.version != FORMAT_VERSION {
            return Err(crate::Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: self.version,
                supported: FORMAT_VERSION,
            });
        }
        Ok(())
    }

    /// The version word of a header that does not decode, if its magic
    /// says it is a segment's: another version may lay the rest out
    /// differently.
    pub(crate) fn peek_version(b: &[u8]) -> Option<u32> {
        (b.len() >= 12 && &b[0..8] == SEG_MAGIC).then(|| le32(b, 8))
    }

    /// Reads and parses the header of an open segment.
    pub fn read(f: &dyn File) -> io::Result<Result<SegmentHeader, DecodeError>> {
        let mut b = [0u8; 44];
        let n = read_full_at(f, &mut b, 0)?;
        Ok(SegmentHeader::decode(&b[..n]))
    }
}

/// The footer of a sealed segment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Footer {
    /// The first index in the segment.
    pub first_index: u64,
    /// The last index in the segment (`first_index - 1` when empty).
    pub last_index: u64,
    /// Byte offset where the records end.
    pub data_end: u64,
    /// Time of the first record.
    pub first_time_ns: u64,
    /// Time of the last record.
    pub last_time_ns: u64,
    /// Sparse index: `(index, offset)` pairs in increasing order.
    pub entries: Vec<(u64, u64)>,
}

impl Footer {
    /// The footer and trailer bytes, to be written at `offset`.
    pub fn encode(&self, offset: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.encoded_len() as usize);
        b.extend_from_slice(FTR_MAGIC);
        for v in [
            self.first_index,
            self.last_index,
            self.data_end,
            self.first_time_ns,
            self.last_time_ns,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for (i, o) in &self.entries {
            b.extend_from_slice(&i.to_le_bytes());
            b.extend_from_slice(&o.to_le_bytes());
        }
        b.extend_from_slice(&offset.to_le_bytes());
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        b.extend_from_slice(END_MAGIC);
        b
    }

    /// Bytes the footer takes, trailer included.
    pub fn encoded_len(&self) -> u64 {
        Self::len_for(self.entries.len())
    }

    /// Bytes a footer with `entries` index entries takes.
    pub const fn len_for(entries: usize) -> u64 {
        FOOTER_FIXED + 16 * entries as u64 + TRAILER_LEN
    }

    /// Parses footer + trailer bytes that were written at `offset`.
    pub fn decode(b: &[u8], offset: u64) -> Result<Footer, DecodeError> {
        let bad = DecodeError::BadSegment;
        if b.len() < (FOOTER_FIXED + TRAILER_LEN) as usize || &b[0..8] != FTR_MAGIC {
            return Err(bad("footer magic"));
        }
        let n = le32(b, 48) as usize;
        if b.len() as u64 != Self::len_for(n) {
            return Err(bad("footer length"));
        }
        let t = b.len() - TRAILER_LEN as usize;
        if &b[t + 16..] != END_MAGIC || le64(b, t) != offset {
            return Err(bad("trailer"));
        }
        // The version word is outside the CRC; an unknown one is refused.
        if le32(b, t + 12) != FORMAT_VERSION {
            return Err(bad("trailer version"));
        }
        if crc32c::crc32c(&b[..t + 8]) != le32(b, t + 8) {
            return Err(bad("footer CRC"));
        }
        let f = Footer {
            first_index: le64(b, 8),
            last_index: le64(b, 16),
            data_end: le64(b, 24),
            first_time_ns: le64(b, 32),
            last_time_ns: le64(b, 40),
            entries: (0..n)
                .map(|k| {
                    let at = FOOTER_FIXED as usize + 16 * k;
                    (le64(b, at), le64(b, at + 8))
                })
                .collect(),
        };
        let sorted = f
            .entries
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1);
        let in_range = f.entries.iter().all(|&(i, o)| {
            i >= f.first_index && i <= f.last_index && o >= HEADER_LEN && o < f.data_end
        });
        if f.first_index == 0
            || f.first_index > MAX_INDEX
            || f.last_index > MAX_INDEX
            || f.last_index.wrapping_add(1) < f.first_index
            || f.data_end > offset
            || f.data_end < HEADER_LEN
            || !sorted
            || !in_range
        {
            return Err(bad("footer fields"));
        }
        Ok(f)
    }

    /// Reads the footer of a segment of length `len`, or `None` if the
    /// segment has no trailer (it is the active one, or its seal was torn).
    pub fn read(f: &dyn File, len: u64) -> io::Result<Option<Result<Footer, DecodeError>>> {
        if len < HEADER_LEN + FOOTER_FIXED + TRAILER_LEN {
            return Ok(None);
        }
        let mut t = [0u8; TRAILER_LEN as usize];
        read_full_at(f, &mut t, len - TRAILER_LEN)?;
        if &t[16..] != END_MAGIC {
            return Ok(None);
        }
        let offset = le64(&t, 0);
        if offset < HEADER_LEN || offset >= len || len - offset > MAX_FOOTER {
            return Ok(Some(Err(DecodeError::BadSegment("trailer offset"))));
        }
        let mut b = vec![0u8; (len - offset) as usize];
        let got = read_full_at(f, &mut b, offset)?;
        b.truncate(got);
        Ok(Some(Footer::decode(&b, offset)))
    }

    /// The offset from which to scan for `index`: the last sparse-index entry
    /// at or before it.
    pub fn seek(&self, index: u64) -> u64 {
        let k = self.entries.partition_point(|&(i, _)| i <= index);
        if k == 0 {
            HEADER_LEN
        } else {
            self.entries[k - 1].1
        }
    }
}

/// Rounds `off` up to the next block boundary.
pub fn align_up(off: u64) -> u64 {
    off.div_ceil(BLOCK) * BLOCK
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let p = segment_path(Path::new("/x"), 42);
        assert_eq!(p, Path::new("/x/00000000000000000042.wlog"));
        assert_eq!(parse_segment_name(&p), Some(42));
        assert_eq!(parse_segment_name(Path::new("/x/42.wlog")), None);
        for outside in [0, MAX_INDEX + 1, u64::MAX] {
            let p = segment_path(Path::new("/x"), outside);
            assert_eq!(parse_segment_name(&p), None, "{}", p.display());
        }
        let top = segment_path(Path::new("/x"), MAX_INDEX);
        assert_eq!(parse_segment_name(&top), Some(MAX_INDEX));
        assert_eq!(
            parse_segment_name(Path::new("/x/00000000000000000042.tmp")),
            None
        );
    }

    #[test]
    fn header_and_footer_round_trip() {
        let h = SegmentHeader {
            version: 1,
            base_index: 9,
            capacity: 1 << 20,
            created_ns: 5,
        };
        assert_eq!(SegmentHeader::decode(&h.encode()).unwrap(), h);
        let f = Footer {
            first_index: 9,
            last_index: 20,
            data_end: 9000,
            first_time_ns: 1,
            last_time_ns: 2,
            entries: vec![(9, 4096), (15, 7000)],
        };
        let b = f.encode(12288);
        assert_eq!(Footer::decode(&b, 12288).unwrap(), f);
        assert!(Footer::decode(&b, 8192).is_err());
        assert_eq!(f.seek(8), HEADER_LEN);
        assert_eq!(f.seek(14), 4096);
        assert_eq!(f.seek(15), 7000);
    }

    #[test]
    fn footers_outside_the_index_range_are_refused() {
        // Regression: a footer with first index 0, or a last index near
        // 2^64, decoded, and `last + 1` then overflowed in recovery and
        // verify.
        for (first, last) in [(0, 5), (MAX_INDEX + 1, MAX_INDEX + 2), (1, u64::MAX - 1)] {
            let f = Footer {
                first_index: first,
                last_index: last,
                data_end: HEADER_LEN,
                ..Footer::default()
            };
            assert!(
                Footer::decode(&f.encode(8192), 8192).is_err(),
                "{first}..={last}"
            );
        }
        let edge = Footer {
            first_index: MAX_INDEX,
            last_index: MAX_INDEX,
            data_end: HEADER_LEN,
            ..Footer::default()
        };
        assert!(Footer::decode(&edge.encode(8192), 8192).is_ok());
    }
}
