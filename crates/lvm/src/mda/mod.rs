//! A metadata area: its 512-byte `mda_header`, the `raw_locn` slots that
//! say where the current text is, and reading that text out of the
//! circular buffer (lvm2: lib/format_text/layout.h, `raw_parse_mda_header`
//! and `read_metadata_location_summary` in format-text.c).
//!
//! Layout of the mda_header, at the metadata area's offset (little-endian):
//!
//! | bytes  | field         | rule                                      |
//! |--------|---------------|-------------------------------------------|
//! | 0..4   | `checksum_xl` | [`crc::calc`] of bytes 4..512             |
//! | 4..20  | `magic`       | [`MAGIC`]                                 |
//! | 20..24 | `version`     | 1                                         |
//! | 24..32 | `start`       | the header's own offset on the device     |
//! | 32..40 | `size`        | the whole area, header included, in bytes |
//! | 40..   | `raw_locns`   | `{u64 offset, u64 size, u32 checksum, u32 flags}` until one with offset 0 |
//!
//! Slot 0 holds the committed text: `offset` from `start`, `size` bytes
//! (a trailing NUL included), its CRC, and in `flags` bit 0
//! ([`RAW_LOCN_IGNORED`]) when the VG's `vgmetadatacopies` leaves this
//! area unused. The text area is the circular buffer
//! `start + 512 .. start + size`: a text that would pass its end continues
//! right after the header, so it is read in two pieces and checksummed as
//! one.

mod text;

pub use text::{TEXT_SIZE_MAX, TextLocation, read_text, text_location};

use crate::crc;
use crate::disk_error::DiskError;

/// Bytes in an mda_header (lvm2's `MDA_HEADER_SIZE`).
pub const MDA_HEADER_SIZE: usize = 512;

/// The mda_header's magic (lvm2's `FMTT_MAGIC`).
pub const MAGIC: [u8; 16] = *b" LVM2 x[5A%r0N*>";

/// The only mda_header version (lvm2's `FMTT_VERSION`).
pub const VERSION: u32 = 1;

/// The raw_locn flag of an ignored metadata area.
pub const RAW_LOCN_IGNORED: u32 = 1;

/// [`MDA_HEADER_SIZE`] as a device offset.
const MDA_HEADER: u64 = MDA_HEADER_SIZE as u64;
/// Where the raw_locn slots start.
const RAW_LOCNS: usize = 40;
/// Bytes per raw_locn.
const RAW_LOCN: usize = 24;

/// A raw_locn: where a metadata text is in the area.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawLocn {
    /// Its offset from the mda_header's `start`.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
    /// [`crc::calc`] of the text.
    pub checksum: u32,
    /// Flags ([`RAW_LOCN_IGNORED`]).
    pub flags: u32,
}

impl RawLocn {
    /// The area is ignored: `vgmetadatacopies` leaves it out, and its text,
    /// if any, is stale.
    pub fn ignored(&self) -> bool {
        self.flags & RAW_LOCN_IGNORED != 0
    }
}

/// A valid mda_header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MdaHeader {
    /// `checksum_xl`, which matched.
    pub checksum: u32,
    /// `start`: the header's offset on the device.
    pub start: u64,
    /// `size`: the whole area in bytes, header included.
    pub size: u64,
    /// Slot 0's flags say the area is ignored (they do so even when the
    /// slot holds no text).
    pub ignored: bool,
    /// The raw_locn slots up to the first with offset 0: empty for an area
    /// that never held a text (an orphan PV's), else slot 0 is the
    /// committed text.
    pub raw_locns: Vec<RawLocn>,
}

impl MdaHeader {
    /// Slot 0, the committed text, if the area holds one.
    pub fn committed(&self) -> Option<&RawLocn> {
        self.raw_locns.first()
    }
}

/// Parses the mda_header read from `area_offset`, with lvm2's checks in
/// lvm2's order: CRC, magic, version, start, size.
pub fn parse_header(
    bytes: &[u8; MDA_HEADER_SIZE],
    area_offset: u64,
) -> Result<MdaHeader, DiskError> {
    let offset = area_offset;
    let stored = u32::from_le_bytes(array(bytes, 0));
    let computed = crc::calc(&bytes[4..]);
    if stored != computed {
        return Err(DiskError::MdaCrc {
            offset,
            stored,
            computed,
        });
    }
    let found: [u8; 16] = array(bytes, 4);
    if found != MAGIC {
        return Err(DiskError::MdaMagic { offset, found });
    }
    let version = u32::from_le_bytes(array(bytes, 20));
    if version != VERSION {
        return Err(DiskError::MdaVersion { offset, version });
    }
    let start = u64::from_le_bytes(array(bytes, 24));
    if start != area_offset {
        return Err(DiskError::MdaStart { offset, start });
    }
    let size = u64::from_le_bytes(array(bytes, 32));
    if size < MDA_HEADER {
        return Err(DiskError::MdaSize { offset, size });
    }

    let mut slots = bytes[RAW_LOCNS..].chunks_exact(RAW_LOCN).map(|s| {
        let s: &[u8; RAW_LOCN] = s.first_chunk().unwrap_or(&[0; RAW_LOCN]);
        RawLocn {
            offset: u64::from_le_bytes(array(s, 0)),
            size: u64::from_le_bytes(array(s, 8)),
            checksum: u32::from_le_bytes(array(s, 16)),
            flags: u32::from_le_bytes(array(s, 20)),
        }
    });
    let ignored = slots.clone().next().is_some_and(|s| s.ignored());
    let mut raw_locns = Vec::new();
    loop {
        match slots.next() {
            None => return Err(DiskError::RawLocnOverflow { offset }),
            Some(s) if s.offset == 0 => break,
            Some(s) => raw_locns.push(s),
        }
    }
    Ok(MdaHeader {
        checksum: stored,
        start,
        size,
        ignored,
        raw_locns,
    })
}

/// The `N` bytes at a fixed offset of a fixed-size buffer that holds them.
fn array<const N: usize, const M: usize>(bytes: &[u8; M], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid header at 4096 of a 1 MiB area with these raw_locn slots.
    fn header(slots: &[RawLocn]) -> [u8; MDA_HEADER_SIZE] {
        let mut b = [0u8; MDA_HEADER_SIZE];
        b[4..20].copy_from_slice(&MAGIC);
        b[20..24].copy_from_slice(&VERSION.to_le_bytes());
        b[24..32].copy_from_slice(&4096u64.to_le_bytes());
        b[32..40].copy_from_slice(&(1u64 << 20).to_le_bytes());
        for (i, s) in slots.iter().enumerate() {
            let at = RAW_LOCNS + i * RAW_LOCN;
            b[at..at + 8].copy_from_slice(&s.offset.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&s.size.to_le_bytes());
            b[at + 16..at + 20].copy_from_slice(&s.checksum.to_le_bytes());
            b[at + 20..at + 24].copy_from_slice(&s.flags.to_le_bytes());
        }
        let crc = crc::calc(&b[4..]);
        b[..4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn slot(offset: u64, flags: u32) -> RawLocn {
        RawLocn {
            offset,
            size: 1000,
            checksum: 7,
            flags,
        }
    }

    #[test]
    fn slots_end_at_the_first_null_one() {
        let h = parse_header(&header(&[slot(512, 0), slot(2048, 0)]), 4096).unwrap();
        assert_eq!(h.raw_locns, vec![slot(512, 0), slot(2048, 0)]);
        assert_eq!(h.committed(), Some(&slot(512, 0)));
        assert!(!h.ignored);
    }

    #[test]
    fn an_empty_slot_0_still_carries_the_ignored_flag() {
        // pvcreate --metadataignore y: no text yet, but the area is ignored.
        let h = parse_header(&header(&[slot(0, RAW_LOCN_IGNORED)]), 4096).unwrap();
        assert!(h.ignored);
        assert_eq!(h.committed(), None);
    }

    #[test]
    fn the_header_must_be_where_it_was_read() {
        assert_eq!(
            parse_header(&header(&[]), 8192),
            Err(DiskError::MdaStart {
                offset: 8192,
                start: 4096
            })
        );
    }
}
