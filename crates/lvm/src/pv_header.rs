//! The pv_header: the PV's uuid and where its data and metadata areas are.
//! It follows the label inside the same 512-byte sector (lvm2:
//! lib/format_text/layout.h, `label_check_pv_layout` in text_label.c).
//!
//! Layout, from the label's `offset_xl` (little-endian):
//!
//! | bytes | field                                                     |
//! |-------|-----------------------------------------------------------|
//! | 0..32 | `pv_uuid`, 32 characters without dashes                   |
//! | 32..40| `device_size_xl`, bytes                                   |
//! | 40..  | data areas: `disk_locn {u64 offset, u64 size}`, until one |
//! |       | with offset 0; then the metadata areas, the same way      |
//! | then  | `pv_header_extension {u32 version, u32 flags}` and its    |
//! |       | NULL-terminated bootloader areas, if 8 bytes still fit    |
//!
//! Every list must end, terminator included, inside the sector. Nothing
//! here knows the device size; [`crate::probe`] checks the areas against
//! it when it reads them.

use crate::Uuid;
use crate::disk_error::{DiskError, LocnList};
use crate::label::{LABEL_HEADER_SIZE, LABEL_SIZE};

/// Bytes in the fixed part of the pv_header (uuid and device size).
const FIXED: usize = 40;
/// Bytes in a `disk_locn`.
const LOCN: usize = 16;
/// Bytes in the fixed part of the extension (version and flags).
const EXT_FIXED: usize = 8;

/// The extension flag LVM sets while the PV belongs to a VG
/// (`PV_EXT_USED`).
pub const PV_EXT_USED: u32 = 1;

/// One area of the device: a `disk_locn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DiskLocn {
    /// Its first byte, from the start of the device.
    pub offset: u64,
    /// Its size in bytes (0 for a data area: "to the end of the device").
    pub size: u64,
}

/// A parsed pv_header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvHeader {
    /// The PV uuid.
    pub uuid: Uuid,
    /// `device_size_xl`: the device size when the PV was written, in bytes
    /// (may be stale if the device has since grown).
    pub device_size: u64,
    /// The data areas; LVM writes one, starting at `pe_start`.
    pub data_areas: Vec<DiskLocn>,
    /// The metadata areas: none, one after the label, or also one at the
    /// end of the device.
    pub metadata_areas: Vec<DiskLocn>,
    /// The extension, when present with a version other than 0.
    pub extension: Option<PvHeaderExtension>,
}

/// The pv_header extension (LVM 2.02.110 and later).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvHeaderExtension {
    /// `version` (2 in current LVM).
    pub version: u32,
    /// `flags` ([`PV_EXT_USED`]).
    pub flags: u32,
    /// The bootloader areas.
    pub bootloader_areas: Vec<DiskLocn>,
}

impl PvHeader {
    /// Where the first data area starts (`pe_start`, in bytes).
    pub fn pe_start(&self) -> Option<u64> {
        self.data_areas.first().map(|d| d.offset)
    }
}

/// Parses the pv_header at `offset` (the label's `offset_xl`) of the label
/// sector `sector`.
pub fn parse(sector: &[u8; LABEL_SIZE], offset: u32) -> Result<PvHeader, DiskError> {
    let start = usize::try_from(offset)
        .ok()
        .filter(|&o| (LABEL_HEADER_SIZE..=LABEL_SIZE - FIXED).contains(&o))
        .ok_or(DiskError::PvHeaderOffset { offset })?;
    let uuid_bytes: [u8; 32] = take(sector, start).ok_or(DiskError::PvHeaderOffset { offset })?;
    let uuid = Uuid::parse(&uuid_bytes).ok_or(DiskError::PvUuid { found: uuid_bytes })?;
    let device_size = take(sector, start + 32)
        .map(u64::from_le_bytes)
        .ok_or(DiskError::PvHeaderOffset { offset })?;

    let (data_areas, next) = locn_list(sector, start + FIXED, LocnList::Data)?;
    let (metadata_areas, next) = locn_list(sector, next, LocnList::Metadata)?;
    let extension = match (take(sector, next), take(sector, next + 4)) {
        (Some(version), Some(flags)) if u32::from_le_bytes(version) != 0 => {
            let (bootloader_areas, _) = locn_list(sector, next + EXT_FIXED, LocnList::Bootloader)?;
            Some(PvHeaderExtension {
                version: u32::from_le_bytes(version),
                flags: u32::from_le_bytes(flags),
                bootloader_areas,
            })
        }
        // Too little room left, or version 0: no extension, as in lvm2.
        _ => None,
    };
    Ok(PvHeader {
        uuid,
        device_size,
        data_areas,
        metadata_areas,
        extension,
    })
}

/// The NULL-terminated `disk_locn` list at `at`, and where the next field
/// starts after its terminator. At most 30 entries fit in a sector, so the
/// vector stays small whatever the bytes say.
fn locn_list(
    sector: &[u8; LABEL_SIZE],
    mut at: usize,
    list: LocnList,
) -> Result<(Vec<DiskLocn>, usize), DiskError> {
    let mut out = Vec::new();
    loop {
        let (Some(offset), Some(size)) = (take(sector, at), take(sector, at + 8)) else {
            return Err(DiskError::LocnOverflow { list });
        };
        at += LOCN;
        let offset = u64::from_le_bytes(offset);
        if offset == 0 {
            return Ok((out, at));
        }
        out.push(DiskLocn {
            offset,
            size: u64::from_le_bytes(size),
        });
    }
}

/// The `N` bytes at `at`, if they lie inside the sector.
fn take<const N: usize>(sector: &[u8; LABEL_SIZE], at: usize) -> Option<[u8; N]> {
    sector.get(at..)?.first_chunk::<N>().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &[u8; 32] = b"HVjR5jd0tKj9jq2vITB3XQWGSdVQqFEU";

    /// A sector with a pv_header at 32 holding these lists.
    fn sector(
        data: &[(u64, u64)],
        mdas: &[(u64, u64)],
        ext: Option<(u32, u32)>,
    ) -> [u8; LABEL_SIZE] {
        let mut b = [0u8; LABEL_SIZE];
        b[32..64].copy_from_slice(UUID);
        b[64..72].copy_from_slice(&(8u64 << 20).to_le_bytes());
        let mut at = 72;
        for list in [data, mdas] {
            for &(o, s) in list {
                b[at..at + 8].copy_from_slice(&o.to_le_bytes());
                b[at + 8..at + 16].copy_from_slice(&s.to_le_bytes());
                at += 16;
            }
            at += 16;
        }
        if let Some((v, f)) = ext {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&f.to_le_bytes());
        }
        b
    }

    #[test]
    fn parses_areas_and_extension() {
        let b = sector(&[(1 << 20, 0)], &[(4096, 1_044_480)], Some((2, 1)));
        let h = parse(&b, 32).unwrap();
        assert_eq!(h.uuid.as_str().as_bytes(), UUID);
        assert_eq!(h.device_size, 8 << 20);
        assert_eq!(h.pe_start(), Some(1 << 20));
        assert_eq!(
            h.metadata_areas,
            vec![DiskLocn {
                offset: 4096,
                size: 1_044_480
            }]
        );
        let ext = h.extension.unwrap();
        assert_eq!((ext.version, ext.flags), (2, PV_EXT_USED));
        assert!(ext.bootloader_areas.is_empty());
    }

    #[test]
    fn version_zero_means_no_extension() {
        let b = sector(&[(1 << 20, 0)], &[], None);
        assert_eq!(parse(&b, 32).unwrap().extension, None);
    }

    #[test]
    fn offsets_outside_the_sector_are_errors() {
        let b = sector(&[], &[], None);
        for offset in [0, 31, 473, 512, u32::MAX] {
            assert_eq!(parse(&b, offset), Err(DiskError::PvHeaderOffset { offset }));
        }
    }

    #[test]
    fn a_bad_uuid_is_an_error() {
        let mut b = sector(&[], &[], None);
        b[40] = b'-';
        assert!(matches!(parse(&b, 32), Err(DiskError::PvUuid { .. })));
    }

    #[test]
    fn an_unterminated_list_is_an_error() {
        let mut b = sector(&[], &[], None);
        // Fill every disk_locn slot after the fixed part with offset 1.
        for at in (72..LABEL_SIZE - 15).step_by(16) {
            b[at] = 1;
        }
        assert_eq!(
            parse(&b, 32),
            Err(DiskError::LocnOverflow {
                list: LocnList::Data
            })
        );
        // A terminator that would end past the sector does not count.
        let mut b = sector(&[], &[], None);
        for at in (72..LABEL_SIZE - 15).step_by(16) {
            b[at] = 1;
        }
        b[LABEL_SIZE - 24] = 0; // the last whole slot ends the data list
        assert_eq!(
            parse(&b, 32),
            Err(DiskError::LocnOverflow {
                list: LocnList::Metadata
            })
        );
    }
}
