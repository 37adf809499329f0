//! Property tests on hostile bytes: real label sectors, pv_headers and
//! mda_headers garbled at random (with the CRC left stale, or recomputed so
//! the damage reaches the structural checks), and random devices. Nothing
//! panics, and whatever parses satisfies every rule it was checked for.

mod support;

use std::sync::LazyLock;

use proptest::prelude::*;
use support::fixture;
use support::patch::{LABEL_AT, MDA1_AT, fix_label_crc, fix_mda_crc, get_u32, get_u64};
use weir_lvm::crc;
use weir_lvm::label::{self, LABEL_ID, LABEL_SCAN_SIZE, LABEL_SIZE, LABEL_TYPE};
use weir_lvm::mda::{self, MAGIC, MDA_HEADER_SIZE, TEXT_SIZE_MAX};
use weir_lvm::probe::{HEAD_SIZE, TextCache, probe};
use weir_lvm::pv_header::{self, PvHeader};

/// mdacopies/pv2: two mdas, one at each end of the device.
static IMAGE: LazyLock<Vec<u8>> = LazyLock::new(|| fixture::image("mdacopies", "pv2"));

/// Up to `n` (position, xor mask) edits in `0..len`.
fn edits(len: usize, n: usize) -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec((0..len, 1..=255u8), 1..=n)
}

fn apply(bytes: &mut [u8], at: usize, edits: &[(usize, u8)]) {
    for &(i, x) in edits {
        bytes[at + i] ^= x;
    }
}

/// The rules a parsed pv_header promises.
fn check_pv_header(h: &PvHeader, offset: u32) {
    assert!(h.uuid.as_str().bytes().all(|b| b.is_ascii_alphanumeric()));
    let lists = [&h.data_areas, &h.metadata_areas];
    assert!(lists.iter().flat_map(|l| l.iter()).all(|d| d.offset != 0));
    // The fixed part, both lists and their terminators fit in the sector.
    let mut end = offset as usize + 40 + 16 * (h.data_areas.len() + h.metadata_areas.len() + 2);
    assert!(end <= LABEL_SIZE);
    if let Some(ext) = &h.extension {
        assert_ne!(ext.version, 0);
        assert!(ext.bootloader_areas.iter().all(|d| d.offset != 0));
        end += 8 + 16 * (ext.bootloader_areas.len() + 1);
        assert!(end <= LABEL_SIZE);
    }
}

proptest! {
    #[test]
    fn garbled_label_sectors_never_panic_and_valid_ones_recheck(
        edits in edits(LABEL_SIZE, 8),
        fix_crc in any::<bool>(),
    ) {
        let mut head = IMAGE[..LABEL_SCAN_SIZE].to_vec();
        apply(&mut head, LABEL_AT, &edits);
        if fix_crc {
            fix_label_crc(&mut head, LABEL_AT);
        }
        if let Ok(Some(found)) = label::find(&head) {
            let b = found.bytes;
            prop_assert_eq!(&b[..8], &LABEL_ID[..]);
            prop_assert_eq!(get_u64(b, 8), found.label.sector);
            prop_assert_eq!(get_u32(b, 16), found.label.crc);
            prop_assert_eq!(crc::calc(&b[20..]), found.label.crc);
            prop_assert_eq!(&b[24..32], &LABEL_TYPE[..]);
            if let Ok(h) = pv_header::parse(b, found.label.pv_header_offset) {
                check_pv_header(&h, found.label.pv_header_offset);
            }
        }
    }

    #[test]
    fn garbled_pv_headers_never_panic_and_stay_in_the_sector(
        edits in edits(LABEL_SIZE - 32, 12),
        offset in prop_oneof![Just(32u32), 0..600u32],
    ) {
        let mut sector = [0u8; LABEL_SIZE];
        sector.copy_from_slice(&IMAGE[LABEL_AT..LABEL_AT + LABEL_SIZE]);
        apply(&mut sector, 32, &edits);
        if let Ok(h) = pv_header::parse(&sector, offset) {
            check_pv_header(&h, offset);
        }
    }

    #[test]
    fn garbled_mda_headers_never_panic_and_valid_ones_recheck(
        edits in edits(MDA_HEADER_SIZE, 8),
        fix_crc in any::<bool>(),
    ) {
        let img = &*IMAGE;
        let mut bytes = [0u8; MDA_HEADER_SIZE];
        bytes.copy_from_slice(&img[MDA1_AT..MDA1_AT + MDA_HEADER_SIZE]);
        apply(&mut bytes, 0, &edits);
        if fix_crc {
            fix_mda_crc(&mut bytes, 0);
        }
        let Ok(h) = mda::parse_header(&bytes, MDA1_AT as u64) else {
            return Ok(());
        };
        prop_assert_eq!(crc::calc(&bytes[4..]), h.checksum);
        prop_assert_eq!(&bytes[4..20], &MAGIC[..]);
        prop_assert_eq!(h.start, MDA1_AT as u64);
        prop_assert!(h.size >= MDA_HEADER_SIZE as u64);
        prop_assert!(h.raw_locns.iter().all(|l| l.offset != 0));
        prop_assert!(h.raw_locns.len() <= 18);
        let device = img.len() as u64;
        for locn in &h.raw_locns {
            let Ok(at) = mda::text_location(&h, locn, device) else {
                continue;
            };
            // Both pieces lie in the circular buffer and on the device,
            // and the wrapped piece ends before the first one starts.
            let buffer = (h.start + 512, h.start + h.size);
            prop_assert_eq!(at.size(), locn.size);
            prop_assert!(locn.size <= TEXT_SIZE_MAX);
            prop_assert!(at.first.0 >= buffer.0 && at.first.0 + at.first.1 <= buffer.1);
            prop_assert_eq!(at.second.0, buffer.0);
            prop_assert!(at.second.0 + at.second.1 <= at.first.0);
            prop_assert!(at.first.0 + at.first.1 <= device);
            if let Ok(text) = mda::read_text(img, &h, locn) {
                prop_assert_eq!(crc::calc(&text), locn.checksum);
            }
        }
    }

    #[test]
    fn probe_never_panics_on_random_devices(
        bytes in proptest::collection::vec(any::<u8>(), 0..6000),
        label_at in 0..4usize,
    ) {
        // Random bytes, sometimes behind a LABELONE so the later checks run.
        let mut bytes = bytes;
        let at = label_at * LABEL_SIZE;
        if bytes.len() >= at + LABEL_SIZE {
            bytes[at..at + 8].copy_from_slice(&LABEL_ID);
            bytes[at + 8..at + 16].copy_from_slice(&(label_at as u64).to_le_bytes());
            bytes[at + 24..at + 32].copy_from_slice(&LABEL_TYPE);
            fix_label_crc(&mut bytes, at);
        }
        let _ = probe(&bytes, &TextCache::new());
    }

    #[test]
    fn probe_never_panics_on_garbled_pvs(
        label_edits in edits(LABEL_SIZE, 6),
        mda_edits in edits(MDA_HEADER_SIZE, 6),
        fix in any::<(bool, bool)>(),
    ) {
        let mut img = IMAGE.clone();
        apply(&mut img, LABEL_AT, &label_edits);
        apply(&mut img, MDA1_AT, &mda_edits);
        if fix.0 {
            fix_label_crc(&mut img, LABEL_AT);
        }
        if fix.1 {
            fix_mda_crc(&mut img, MDA1_AT);
        }
        let Ok(Some(pv)) = probe(&img, &TextCache::new()) else {
            return Ok(());
        };
        prop_assert!(pv.header_bytes_read <= HEAD_SIZE as u64 + 512 * pv.mda_count() as u64);
        prop_assert_eq!(pv.vg.is_some(), pv.chosen_mda.is_some());
        if let Some(c) = pv.chosen_mda {
            prop_assert_eq!(pv.text_key, pv.mdas[c].text_key);
            prop_assert!(pv.mdas[c].in_use() && pv.mdas[c].problem.is_none());
        }
    }
}
