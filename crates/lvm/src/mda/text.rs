//! Where a metadata text lies in its area's circular buffer, and reading
//! it: bounded by the area, by [`TEXT_SIZE_MAX`] and by the device before
//! anything is allocated, then checked against its raw_locn's CRC.
//!
//! The buffer is `start + 512 .. start + size`. A text at `offset` of
//! `size` bytes that passes `start + size` continues at `start + 512` with
//! its last `offset + size - area size` bytes (lvm2's `wrap`).

use super::{MDA_HEADER, MdaHeader, RawLocn};
use crate::ReadAt;
use crate::crc;
use crate::disk_error::DiskError;

/// The largest metadata text weir reads: 32 MiB.
///
/// LVM's text takes a few hundred bytes per PV and per LV segment, so even
/// a VG with ten thousand LVs stays well under 16 MiB; and lvm2 itself
/// keeps a text within half its area (under 512 KiB with the default
/// 1 MiB area), since the old text must survive while the new one is
/// written. A text is
/// held in memory while it is read and parsed, and several PVs may be
/// probed at once, so the cap bounds what a hostile header can make weir
/// allocate, at twice the largest plausible real text.
pub const TEXT_SIZE_MAX: u64 = 32 << 20;

/// Where a text is on the device: one piece, or two when it wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextLocation {
    /// The first piece: absolute offset and length.
    pub first: (u64, u64),
    /// The wrapped rest, right after the mda_header; length 0 if none.
    pub second: (u64, u64),
}

impl TextLocation {
    /// The text's size in bytes.
    pub fn size(&self) -> u64 {
        self.first.1 + self.second.1
    }

    /// The text wraps around the end of the area.
    pub fn wraps(&self) -> bool {
        self.second.1 > 0
    }
}

/// Checks where `locn`'s text lies: inside `header`'s circular buffer, no
/// larger than [`TEXT_SIZE_MAX`], and inside a device of `device_size`.
pub fn text_location(
    header: &MdaHeader,
    locn: &RawLocn,
    device_size: u64,
) -> Result<TextLocation, DiskError> {
    let buffer = header.size - MDA_HEADER; // parse_header checked size >= 512
    if locn.offset < MDA_HEADER || locn.offset >= header.size || locn.size > buffer {
        return Err(DiskError::TextOutOfArea {
            mda_offset: header.start,
            text_offset: locn.offset,
            text_size: locn.size,
            area_size: header.size,
        });
    }
    if locn.size > TEXT_SIZE_MAX {
        return Err(DiskError::TextTooLarge {
            size: locn.size,
            limit: TEXT_SIZE_MAX,
        });
    }
    // Both are below header.size, so neither sum nor difference overflows.
    let until_end = header.size - locn.offset;
    let wrap = locn.size.saturating_sub(until_end);
    let first = (header.start.checked_add(locn.offset), locn.size - wrap);
    let second = (header.start.checked_add(MDA_HEADER), wrap);
    let inside = |piece: (Option<u64>, u64)| -> Result<(u64, u64), DiskError> {
        match piece.0 {
            Some(at)
                if at
                    .checked_add(piece.1)
                    .is_some_and(|end| end <= device_size) =>
            {
                Ok((at, piece.1))
            }
            _ => Err(DiskError::TextOutsideDevice {
                offset: piece.0.unwrap_or(u64::MAX),
                size: piece.1,
                device_size,
            }),
        }
    };
    Ok(TextLocation {
        first: inside(first)?,
        second: inside(second)?,
    })
}

/// Reads `locn`'s text (both pieces if it wraps) and checks its CRC. It
/// allocates only once [`text_location`] has bounded the size.
pub fn read_text<R: ReadAt + ?Sized>(
    dev: &R,
    header: &MdaHeader,
    locn: &RawLocn,
) -> crate::Result<Vec<u8>> {
    let at = text_location(header, locn, dev.size())?;
    // At most TEXT_SIZE_MAX, which fits in usize on every target weir runs on.
    let first_len = usize::try_from(at.first.1).map_err(|_| too_large(locn))?;
    let total = usize::try_from(at.size()).map_err(|_| too_large(locn))?;
    let mut text = vec![0u8; total];
    let (head, tail) = text.split_at_mut(first_len);
    for ((offset, _), buf) in [(at.first, head), (at.second, tail)] {
        if !buf.is_empty() {
            dev.read_exact_at(offset, buf)
                .map_err(|source| crate::Error::Io {
                    what: "metadata text",
                    offset,
                    source,
                })?;
        }
    }
    let computed = crc::calc(&text);
    if computed != locn.checksum {
        return Err(DiskError::TextChecksum {
            offset: at.first.0,
            stored: locn.checksum,
            computed,
        }
        .into());
    }
    Ok(text)
}

fn too_large(locn: &RawLocn) -> DiskError {
    DiskError::TextTooLarge {
        size: locn.size,
        limit: TEXT_SIZE_MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: u64 = 4096;
    const AREA: u64 = 8192;

    fn header() -> MdaHeader {
        MdaHeader {
            checksum: 0,
            start: START,
            size: AREA,
            ignored: false,
            raw_locns: Vec::new(),
        }
    }

    fn locn(offset: u64, size: u64, text: &[u8]) -> RawLocn {
        RawLocn {
            offset,
            size,
            checksum: crc::calc(text),
            flags: 0,
        }
    }

    #[test]
    fn a_text_ending_at_the_end_of_the_area_does_not_wrap() {
        let at = text_location(&header(), &locn(AREA - 100, 100, b""), 1 << 20).unwrap();
        assert_eq!(at.first, (START + AREA - 100, 100));
        assert!(!at.wraps());
        let at = text_location(&header(), &locn(AREA - 100, 101, b""), 1 << 20).unwrap();
        assert_eq!(
            (at.first, at.second),
            ((START + AREA - 100, 100), (START + 512, 1))
        );
    }

    #[test]
    fn a_wrapped_text_is_read_as_one() {
        let text = b"weirfx {\nseqno = 7\n}\n\0";
        let mut dev = vec![0u8; (START + AREA) as usize];
        let end = (START + AREA) as usize;
        dev[end - 10..].copy_from_slice(&text[..10]);
        let rest = START as usize + 512;
        dev[rest..rest + text.len() - 10].copy_from_slice(&text[10..]);
        let l = locn(AREA - 10, text.len() as u64, text);
        assert_eq!(read_text(&dev, &header(), &l).unwrap(), text);
        // The same text claimed unwrapped, or with another checksum, fails.
        let bad = RawLocn {
            checksum: l.checksum ^ 1,
            ..l
        };
        assert!(matches!(
            read_text(&dev, &header(), &bad),
            Err(crate::Error::Disk(DiskError::TextChecksum { .. }))
        ));
    }

    #[test]
    fn the_largest_text_fills_the_buffer_exactly() {
        let buffer = AREA - 512;
        let at = text_location(&header(), &locn(AREA - 1, buffer, b""), 1 << 20).unwrap();
        // One byte at the end, the rest from the start of the buffer up to
        // the byte before it: nothing overlaps.
        assert_eq!(at.first, (START + AREA - 1, 1));
        assert_eq!(at.second, (START + 512, buffer - 1));
        assert_eq!(at.second.0 + at.second.1, at.first.0);
        assert!(text_location(&header(), &locn(AREA - 1, buffer + 1, b""), 1 << 20).is_err());
    }
}
