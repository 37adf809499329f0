//! Editing a real PV image the way a damaged or hostile disk would differ
//! from it, then (when a test wants the damage to pass the CRC and reach
//! the next check) making the stored CRC match again.

use weir_lvm::crc;

/// Where LVM writes its label: sector 1.
pub(crate) const LABEL_AT: usize = 512;
/// The pv_header, at the label's `offset_xl` (32).
pub(crate) const PV_HEADER_AT: usize = LABEL_AT + 32;
/// The first mda_header, at 4 KiB.
pub(crate) const MDA1_AT: usize = 4096;

/// Writes a little-endian u64 at `at`.
pub(crate) fn put_u64(img: &mut [u8], at: usize, v: u64) {
    img[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian u32 at `at`.
pub(crate) fn put_u32(img: &mut [u8], at: usize, v: u32) {
    img[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Reads a little-endian u64 at `at`.
pub(crate) fn get_u64(img: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(img[at..at + 8].try_into().unwrap())
}

/// Reads a little-endian u32 at `at`.
pub(crate) fn get_u32(img: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(img[at..at + 4].try_into().unwrap())
}

/// Recomputes the CRC of the label sector starting at `sector_at`.
pub(crate) fn fix_label_crc(img: &mut [u8], sector_at: usize) {
    let c = crc::calc(&img[sector_at + 20..sector_at + 512]);
    put_u32(img, sector_at + 16, c);
}

/// Recomputes the CRC of the mda_header at `at`.
pub(crate) fn fix_mda_crc(img: &mut [u8], at: usize) {
    let c = crc::calc(&img[at + 4..at + 512]);
    put_u32(img, at, c);
}

/// The byte offset of raw_locn slot `slot`'s field at `field` (0 offset,
/// 8 size, 16 checksum, 20 flags) in the mda_header at `mda_at`.
pub(crate) fn raw_locn(mda_at: usize, slot: usize, field: usize) -> usize {
    mda_at + 40 + 24 * slot + field
}
