//! The LVM2 label: how a PV says it is one, in one of its first four
//! sectors (lvm2: lib/label/label.h, `_find_lvm_header` in label.c).
//!
//! Layout of the 32-byte `label_header` at the start of its 512-byte sector
//! (all integers little-endian):
//!
//! | bytes  | field       | rule                                         |
//! |--------|-------------|----------------------------------------------|
//! | 0..8   | `id`        | `LABELONE`                                   |
//! | 8..16  | `sector_xl` | the sector the label is in                   |
//! | 16..20 | `crc_xl`    | [`crc::calc`] of bytes 20..512 of the sector |
//! | 20..24 | `offset_xl` | where the pv_header starts in the sector     |
//! | 24..32 | `type`      | `LVM2 001`                                   |
//!
//! The first sector whose label passes every check wins, as in lvm2, which
//! skips a bad one and looks on. A device with no `LABELONE` at all is not
//! a PV; one whose only labels are bad is an error, so that a damaged PV is
//! reported rather than taken for an empty disk.

use crate::crc;
use crate::disk_error::DiskError;

/// Bytes in a label sector (lvm2's `LABEL_SIZE`).
pub const LABEL_SIZE: usize = 512;

/// Sectors searched for a label (lvm2's `LABEL_SCAN_SECTORS`).
pub const LABEL_SCAN_SECTORS: usize = 4;

/// Bytes read to find the label (lvm2's `LABEL_SCAN_SIZE`).
pub const LABEL_SCAN_SIZE: usize = LABEL_SIZE * LABEL_SCAN_SECTORS;

/// Bytes in the `label_header`, where the pv_header may start at the
/// earliest.
pub const LABEL_HEADER_SIZE: usize = 32;

/// The label's `id`.
pub const LABEL_ID: [u8; 8] = *b"LABELONE";

/// The label's `type` for the LVM2 text format.
pub const LABEL_TYPE: [u8; 8] = *b"LVM2 001";

/// Where the CRC'd part of the sector starts (`offset_xl`).
const CRC_START: usize = 20;

/// A valid label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    /// The sector it is in (0–3; LVM writes sector 1).
    pub sector: u64,
    /// `crc_xl`, which matched.
    pub crc: u32,
    /// `offset_xl`: where the pv_header starts, from the start of the
    /// sector (not yet checked; [`crate::pv_header::parse`] does).
    pub pv_header_offset: u32,
}

/// A valid label and the sector that holds it.
#[derive(Clone, Copy, Debug)]
pub struct LabelSector<'a> {
    /// The label.
    pub label: Label,
    /// The whole 512-byte sector, which also holds the pv_header.
    pub bytes: &'a [u8; LABEL_SIZE],
}

/// Finds the label in `head`, the first bytes of a device (normally
/// [`LABEL_SCAN_SIZE`]; fewer on a tiny device, whose missing sectors are
/// simply not searched).
///
/// `Ok(None)`: no sector starts with `LABELONE`. `Err`: some do, but none
/// is valid; the error is the first one's.
pub fn find(head: &[u8]) -> Result<Option<LabelSector<'_>>, DiskError> {
    let mut first_error = None;
    let sectors = head.chunks_exact(LABEL_SIZE).take(LABEL_SCAN_SECTORS);
    for (sector, bytes) in (0u64..).zip(sectors) {
        let Some(bytes) = bytes.first_chunk::<LABEL_SIZE>() else {
            continue;
        };
        match check(sector, bytes) {
            Ok(Some(label)) => return Ok(Some(LabelSector { label, bytes })),
            Ok(None) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(None), Err)
}

/// Checks one sector: `Ok(None)` unless it starts with `LABELONE`, then
/// the label if its sector number, CRC and type are right.
pub fn check(sector: u64, bytes: &[u8; LABEL_SIZE]) -> Result<Option<Label>, DiskError> {
    if bytes[..8] != LABEL_ID {
        return Ok(None);
    }
    let claimed = u64::from_le_bytes(array(bytes, 8));
    if claimed != sector {
        return Err(DiskError::LabelSector { sector, claimed });
    }
    let stored = u32::from_le_bytes(array(bytes, 16));
    let computed = crc::calc(&bytes[CRC_START..]);
    if stored != computed {
        return Err(DiskError::LabelCrc {
            sector,
            stored,
            computed,
        });
    }
    let found: [u8; 8] = array(bytes, 24);
    if found != LABEL_TYPE {
        return Err(DiskError::LabelType { sector, found });
    }
    Ok(Some(Label {
        sector,
        crc: stored,
        pv_header_offset: u32::from_le_bytes(array(bytes, 20)),
    }))
}

/// The `N` bytes at a fixed offset of the label header, which always lies
/// inside the sector.
fn array<const N: usize>(bytes: &[u8; LABEL_SIZE], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sector holding a valid label at `sector`.
    fn labelled(sector: u64) -> [u8; LABEL_SIZE] {
        let mut b = [0u8; LABEL_SIZE];
        b[..8].copy_from_slice(&LABEL_ID);
        b[8..16].copy_from_slice(&sector.to_le_bytes());
        b[20..24].copy_from_slice(&32u32.to_le_bytes());
        b[24..32].copy_from_slice(&LABEL_TYPE);
        b[100] = 0x5a; // something in the CRC'd part
        let crc = crc::calc(&b[20..]);
        b[16..20].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn head_with(sector: usize, bytes: &[u8; LABEL_SIZE]) -> Vec<u8> {
        let mut head = vec![0u8; LABEL_SCAN_SIZE];
        head[sector * LABEL_SIZE..][..LABEL_SIZE].copy_from_slice(bytes);
        head
    }

    #[test]
    fn finds_a_label_in_any_of_the_four_sectors() {
        for s in 0..4 {
            let head = head_with(s, &labelled(s as u64));
            let found = find(&head).unwrap().expect("label");
            assert_eq!(found.label.sector, s as u64);
            assert_eq!(found.label.pv_header_offset, 32);
            assert_eq!(found.bytes[100], 0x5a);
        }
    }

    #[test]
    fn no_labelone_is_not_a_pv() {
        assert_eq!(
            find(&[0u8; LABEL_SCAN_SIZE]).unwrap().map(|l| l.label),
            None
        );
        assert_eq!(find(&[]).unwrap().map(|l| l.label), None);
    }

    #[test]
    fn a_label_for_another_sector_is_an_error() {
        let head = head_with(2, &labelled(1));
        assert_eq!(
            find(&head).unwrap_err(),
            DiskError::LabelSector {
                sector: 2,
                claimed: 1
            }
        );
    }

    #[test]
    fn a_bad_crc_is_an_error_with_both_values() {
        let mut b = labelled(1);
        b[300] ^= 1;
        let computed = crc::calc(&b[20..]);
        let err = find(&head_with(1, &b)).unwrap_err();
        let stored = u32::from_le_bytes(b[16..20].try_into().unwrap());
        assert_eq!(
            err,
            DiskError::LabelCrc {
                sector: 1,
                stored,
                computed
            }
        );
    }

    #[test]
    fn a_bad_type_is_an_error() {
        let mut b = labelled(0);
        b[24..32].copy_from_slice(b"LVM1 001");
        let crc = crc::calc(&b[20..]);
        b[16..20].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            find(&head_with(0, &b)),
            Err(DiskError::LabelType { sector: 0, found }) if &found == b"LVM1 001"
        ));
    }

    #[test]
    fn a_valid_label_after_a_bad_one_wins() {
        let mut head = head_with(3, &labelled(3));
        let mut bad = labelled(0);
        bad[200] ^= 0xff;
        head[..LABEL_SIZE].copy_from_slice(&bad);
        assert_eq!(find(&head).unwrap().unwrap().label.sector, 3);
    }

    #[test]
    fn a_short_head_searches_only_whole_sectors() {
        let head = head_with(1, &labelled(1));
        assert_eq!(
            find(&head[..LABEL_SIZE + 511]).unwrap().map(|l| l.label),
            None
        );
        assert!(find(&head[..2 * LABEL_SIZE]).unwrap().is_some());
    }
}
