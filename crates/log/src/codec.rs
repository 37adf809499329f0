//! The record frame codec (format version 1; see `docs/format.md`).
//!
//! A frame is a 36-byte little-endian header followed by the variable parts.
//! The CRC32C covers the length and everything after the CRC, so a torn or
//! misplaced frame is never taken for a record. Decoding treats its input as
//! hostile: every length is checked before it is used.

use crate::error::{Error, Result};
use crate::kind::RecordType;
use crate::record::{Fields, LogRecord, Record, RecordRef};

/// Size of the fixed frame header.
pub const HEADER_LEN: usize = 36;
/// The largest frame accepted, header included.
pub const MAX_FRAME: usize = 1 << 20;
/// Maximum number of extra fields.
pub const MAX_FIELDS: usize = 1024;

/// Why bytes do not decode as a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The length word is zero: padding or unwritten space.
    #[error("zero length (padding or unwritten space)")]
    Zero,
    /// The length word is outside `HEADER_LEN..=MAX_FRAME`.
    #[error("frame length {0} out of range")]
    BadLength(u32),
    /// Fewer bytes are available than the length word claims.
    #[error("frame of {need} bytes truncated to {have}")]
    Truncated {
        /// Bytes the frame needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The checksum does not match.
    #[error("CRC mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Crc {
        /// The stored CRC.
        stored: u32,
        /// The CRC of the bytes.
        computed: u32,
    },
    /// The declared part lengths do not add up to the frame length.
    #[error("part lengths do not fit the frame")]
    Layout,
    /// A field key is not UTF-8.
    #[error("field key is not UTF-8")]
    KeyNotUtf8,
    /// The index is not the one expected at this position.
    #[error("index {found} where {expected} was expected")]
    Gap {
        /// The index expected.
        expected: u64,
        /// The index found.
        found: u64,
    },
    /// A segment header, footer or trailer is malformed.
    #[error("bad segment {0}")]
    BadSegment(&'static str),
}

/// The encoded size of a record, or an error if a part is too long.
pub fn encoded_len(r: &Record<'_>) -> Result<usize> {
    check_len("target", r.target.len(), u16::MAX as usize)?;
    check_len("parent", r.parent.len(), u16::MAX as usize)?;
    check_len("name", r.name.len(), u16::MAX as usize)?;
    check_len("field count", r.fields.len(), MAX_FIELDS)?;
    let mut n = HEADER_LEN + r.target.len() + r.parent.len() + r.name.len();
    for f in r.fields {
        check_len("field key", f.key.len(), u16::MAX as usize)?;
        n += 6 + f.key.len() + f.value.len();
    }
    if n > MAX_FRAME {
        return Err(Error::RecordTooLarge {
            size: n,
            limit: MAX_FRAME,
        });
    }
    Ok(n)
}

fn check_len(field: &'static str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::FieldTooLong { field, len, max });
    }
    Ok(())
}

/// Appends the frame of `r` to `out`. `len` must come from [`encoded_len`].
pub fn encode_into(r: &Record<'_>, index: u64, time_ns: u64, len: usize, out: &mut Vec<u8>) {
    let start = out.len();
    encode_unsealed_into(r, index, time_ns, len, out);
    seal(&mut out[start..]);
}

/// [`encode_into`] without the CRC (see [`encode_unsealed_to`]).
pub(crate) fn encode_unsealed_into(
    r: &Record<'_>,
    index: u64,
    time_ns: u64,
    len: usize,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    out.resize(start + len, 0);
    encode_unsealed_to(r, index, time_ns, &mut out[start..]);
}

/// Writes the frame of `r` into `out`, which must be exactly
/// [`encoded_len`] bytes long, with no allocation and no capacity checks.
///
/// # Panics
///
/// If `out` is not the record's encoded length.
#[inline]
pub fn encode_to(r: &Record<'_>, index: u64, time_ns: u64, out: &mut [u8]) {
    encode_unsealed_to(r, index, time_ns, out);
    seal(out);
}

/// [`encode_to`] with the CRC field left zero. The append path encodes
/// this way and the committer seals each frame as it places it in the
/// segment, in one loop over frames it copies anyway: less work for the
/// writer, which is what the log must keep cheap (in `perf` the CRC took
/// 0.59% of all CPU in the writers, 0.40–0.43% in the committer).
#[inline]
pub(crate) fn encode_unsealed_to(r: &Record<'_>, index: u64, time_ns: u64, out: &mut [u8]) {
    let len = out.len();
    let mut w = Cursor { out, at: 0 };
    w.put(&(len as u32).to_le_bytes());
    w.put(&[0; 4]);
    w.put(&index.to_le_bytes());
    w.put(&time_ns.to_le_bytes());
    w.put(&r.kind.0.to_le_bytes());
    w.put(&r.flags.to_le_bytes());
    for part in [r.target.len(), r.parent.len(), r.name.len(), r.fields.len()] {
        w.put(&(part as u16).to_le_bytes());
    }
    w.put_short(r.target);
    w.put_short(r.parent);
    w.put_short(r.name);
    for f in r.fields {
        w.put(&(f.key.len() as u16).to_le_bytes());
        w.put(&(f.value.len() as u32).to_le_bytes());
        w.put_short(f.key.as_bytes());
        w.put_short(f.value);
    }
    assert_eq!(w.at, len, "the buffer is not the encoded length");
}

/// Where a frame's index sits: bytes 8..16 of the header.
pub(crate) const INDEX_AT: std::ops::Range<usize> = 8..16;

/// Sets the index of an unsealed frame. The append path encodes a small
/// frame before it has its index, so that the encoding overlaps the wait
/// for the index counter's cache line, and fills the index in after.
///
/// # Panics
///
/// If `frame` is shorter than a header.
#[inline]
pub(crate) fn set_index(frame: &mut [u8], index: u64) {
    assert!(frame.len() >= HEADER_LEN, "not a frame");
    frame[INDEX_AT].copy_from_slice(&index.to_le_bytes());
}

/// Computes the CRC of a whole frame and stores it in bytes 4..8. Sealing
/// twice gives the same bytes: the CRC does not cover its own field.
///
/// # Panics
///
/// If `frame` is shorter than a header.
#[inline]
pub fn seal(frame: &mut [u8]) {
    assert!(frame.len() >= HEADER_LEN, "not a frame");
    let crc = frame_crc(frame);
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Writes parts one after another into a slice of known length.
struct Cursor<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Cursor<'_> {
    #[inline]
    fn put(&mut self, b: &[u8]) {
        self.out[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }

    /// [`Cursor::put`] for a part of any length that is usually short (an
    /// id, a name): see [`copy_short`].
    #[inline]
    fn put_short(&mut self, b: &[u8]) {
        copy_short(&mut self.out[self.at..self.at + b.len()], b);
        self.at += b.len();
    }
}

/// Copies `src` into `dst` (of the same length) with at most two loads and
/// two stores of a fixed width when it is 32 bytes or shorter, overlapping
/// in the middle, instead of a call to `memcpy`: the parts of a record
/// (an 8-byte id, a name of a few dozen bytes) are that short, and the
/// calls with their dispatch on length took a fifth of an append's cost
/// in the writer (`perf`, the changelog-overhead load).
#[inline]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    match n {
        0 => {}
        1..=3 => {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        17..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// Encodes a record into a new buffer (convenient for tests and tools).
pub fn encode(r: &Record<'_>, index: u64, time_ns: u64) -> Result<Vec<u8>> {
    let len = encoded_len(r)?;
    let mut v = Vec::with_capacity(len);
    encode_into(r, index, time_ns, len, &mut v);
    Ok(v)
}

/// Frames up to this long get their CRC from one plain loop of the CPU's
/// instruction (`weir_sys::crc32c`), three times as fast as the `crc32c`
/// crate on a typical 64-byte frame and still faster at 768 bytes. Longer
/// ones go to the crate, whose three interleaved streams start at 768
/// bytes and win from about a kilobyte on.
const SHORT_FRAME: usize = 768;

fn frame_crc(frame: &[u8]) -> u32 {
    let (len, rest) = (&frame[0..4], &frame[8..]);
    if frame.len() <= SHORT_FRAME
        && let Some(c) = weir_sys::crc32c::crc32c_append(0, len)
            .and_then(|c| weir_sys::crc32c::crc32c_append(c, rest))
    {
        return c;
    }
    crc32c::crc32c_append(crc32c::crc32c(len), rest)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads the length word at the start of `buf` and checks its range.
///
/// Returns the frame length, or why the bytes cannot start a frame. Fewer
/// than four bytes count as truncated.
pub fn frame_len(buf: &[u8]) -> Result<usize, DecodeError> {
    if buf.len() < 4 {
        return Err(DecodeError::Truncated {
            need: 4,
            have: buf.len(),
        });
    }
    let len = u32_at(buf, 0);
    if len == 0 {
        return Err(DecodeError::Zero);
    }
    if (len as usize) < HEADER_LEN || len as usize > MAX_FRAME {
        return Err(DecodeError::BadLength(len));
    }
    Ok(len as usize)
}

/// A frame checked and split into parts, borrowing the buffer.
#[derive(Debug, Clone, Copy)]
pub struct FrameRef<'a> {
    /// Total frame length.
    pub len: usize,
    /// The index stored in the frame.
    pub index: u64,
    /// The time stored in the frame.
    pub time_ns: u64,
    /// The record type.
    pub kind: RecordType,
    bytes: &'a [u8],
}

/// Checks the frame at the start of `buf`: length, CRC and layout.
pub fn check_frame(buf: &[u8]) -> Result<FrameRef<'_>, DecodeError> {
    let len = frame_len(buf)?;
    if buf.len() < len {
        return Err(DecodeError::Truncated {
            need: len,
            have: buf.len(),
        });
    }
    let frame = &buf[..len];
    let stored = u32_at(frame, 4);
    let computed = frame_crc(frame);
    if stored != computed {
        return Err(DecodeError::Crc { stored, computed });
    }
    let fr = FrameRef {
        len,
        index: u64_at(frame, 8),
        time_ns: u64_at(frame, 16),
        kind: RecordType(u16_at(frame, 24)),
        bytes: frame,
    };
    // Walk the layout once so that a frame accepted here always decodes.
    fr.check_layout()?;
    Ok(fr)
}

/// A frame's target, parent, name and encoded fields.
type Parts<'a> = (&'a [u8], &'a [u8], &'a [u8], FieldArea<'a>);

impl<'a> FrameRef<'a> {
    /// The frame's parts: the one split of its layout. `None` when they
    /// do not fit in it.
    fn parts(&self) -> Option<Parts<'a>> {
        let b = self.bytes;
        let rest = b.get(HEADER_LEN..)?;
        let (target, rest) = rest.split_at_checked(usize::from(u16_at(b, 28)))?;
        let (parent, rest) = rest.split_at_checked(usize::from(u16_at(b, 30)))?;
        let (name, rest) = rest.split_at_checked(usize::from(u16_at(b, 32)))?;
        let count = usize::from(u16_at(b, 34));
        (count <= MAX_FIELDS).then_some((target, parent, name, FieldArea { bytes: rest, count }))
    }

    /// Checks that the parts and fields fill the frame exactly.
    fn check_layout(&self) -> Result<(), DecodeError> {
        let (_, _, _, fields) = self.parts().ok_or(DecodeError::Layout)?;
        let (mut seen, mut used) = (0, 0);
        for (key, value) in fields.iter() {
            // Keys are short ASCII words; the full check only for others.
            if !key.is_ascii() && std::str::from_utf8(key).is_err() {
                return Err(DecodeError::KeyNotUtf8);
            }
            seen += 1;
            used += 6 + key.len() + value.len();
        }
        if seen != fields.count || used != fields.bytes.len() {
            return Err(DecodeError::Layout);
        }
        Ok(())
    }

    /// The record's flags.
    pub fn flags(&self) -> u16 {
        self.bytes.get(26..28).map_or(0, |b| u16_at(b, 0))
    }

    /// The raw frame bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Copies the frame into an owned record.
    pub fn to_record(&self) -> LogRecord {
        self.record().to_record()
    }

    /// The record, borrowing the frame. `check_frame` validated the
    /// layout; a trusted frame that does not hold one yields empty parts.
    pub fn record(&self) -> RecordRef<'a> {
        let (target, parent, name, fields) = self.parts().unwrap_or_default();
        RecordRef {
            index: self.index,
            time_ns: self.time_ns,
            kind: self.kind,
            flags: self.flags(),
            target,
            parent,
            name,
            fields: Fields::Frame(fields),
        }
    }
}

/// A frame's encoded fields, read as they are asked for.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FieldArea<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> FieldArea<'a> {
    /// The fields as `(key, value)`, up to the first that does not fit.
    pub(crate) fn iter(self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
        let mut rest = self.bytes;
        (0..self.count).map_while(move |_| {
            let hdr = rest.get(..6)?;
            let klen = usize::from(u16_at(hdr, 0));
            let vlen = u32_at(hdr, 2) as usize;
            let kend = klen.checked_add(6)?;
            let vend = kend.checked_add(vlen)?;
            let key = rest.get(6..kend)?;
            let value = rest.get(kend..vend)?;
            rest = &rest[vend..];
            Some((key, value))
        })
    }
}

/// Splits a frame that was already checked by [`check_frame`], skipping the
/// CRC. Lengths are still bounded, so wrong input yields wrong parts, never a
/// panic.
pub(crate) fn trusted_frame(buf: &[u8]) -> FrameRef<'_> {
    let len = frame_len(buf).unwrap_or(buf.len()).min(buf.len());
    let hdr = |at: usize| buf.get(at..at + 8).map_or(0, |b| u64_at(b, 0));
    FrameRef {
        len,
        index: hdr(8),
        time_ns: hdr(16),
        kind: RecordType(buf.get(24..26).map_or(0, |b| u16_at(b, 0))),
        bytes: &buf[..len],
    }
}

/// Decodes one frame from the start of `buf` into an owned record.
pub fn decode(buf: &[u8]) -> Result<(LogRecord, usize), DecodeError> {
    let f = check_frame(buf)?;
    Ok((f.to_record(), f.len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Field;

    #[test]
    fn short_copies_of_every_length_copy_exactly_their_bytes() {
        // Each width of copy_short, its edges, and the memcpy beyond; the
        // guard bytes around the target catch a store out of place.
        for n in 0..=70usize {
            let src: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(37) ^ 0x5a).collect();
            let mut out = vec![0xeeu8; n + 16];
            copy_short(&mut out[8..8 + n], &src);
            assert_eq!(&out[8..8 + n], &src[..], "{n} bytes");
            assert!(
                out[..8].iter().chain(&out[8 + n..]).all(|&b| b == 0xee),
                "{n} bytes: {out:?}"
            );
        }
    }

    #[test]
    fn short_and_long_frames_get_the_same_crc_as_the_crate_gives() {
        // Both sides of SHORT_FRAME, where frame_crc changes method.
        for len in [
            36,
            37,
            64,
            127,
            SHORT_FRAME - 1,
            SHORT_FRAME,
            SHORT_FRAME + 1,
            4096,
        ] {
            let frame: Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            let want = crc32c::crc32c_append(crc32c::crc32c(&frame[0..4]), &frame[8..]);
            assert_eq!(frame_crc(&frame), want, "frame of {len} bytes");
        }
    }

    #[test]
    fn round_trip_and_crc_detects_flips() {
        let fields = [Field {
            key: "k",
            value: b"\xff\x00v",
        }];
        let r = Record::new(RecordType::CREAT)
            .flags(7)
            .target(b"t")
            .parent(&[1, 2, 3])
            .name(b"f\xe9")
            .fields(&fields);
        let bytes = encode(&r, 42, 99).unwrap();
        let (d, n) = decode(&bytes).unwrap();
        assert_eq!(n, bytes.len());
        assert_eq!(
            (d.index, d.time_ns, d.kind, d.flags),
            (42, 99, RecordType::CREAT, 7)
        );
        assert_eq!(d.name, b"f\xe9");
        assert_eq!(d.field("k"), Some(&b"\xff\x00v"[..]));
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(decode(&b).is_err(), "flip at byte {i} went unnoticed");
        }
    }

    #[test]
    fn a_frame_is_valid_only_once_sealed_and_sealing_again_changes_nothing() {
        // Writers leave the CRC to the committer, which seals each frame as
        // it places it; an unsealed frame must never pass for a record.
        let r = Record::new(RecordType::UNLNK)
            .parent(&[9; 8])
            .name(b"a name");
        let len = encoded_len(&r).unwrap();
        let mut frame = vec![0u8; len];
        encode_unsealed_to(&r, 5, 6, &mut frame);
        assert_eq!(frame[4..8], [0; 4]);
        assert!(matches!(decode(&frame), Err(DecodeError::Crc { .. })));
        seal(&mut frame);
        assert_eq!(frame, encode(&r, 5, 6).unwrap());
        seal(&mut frame);
        assert_eq!(frame, encode(&r, 5, 6).unwrap());
    }
}
