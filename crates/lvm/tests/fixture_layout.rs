//! The binary layers (label, pv_header, mda_header, raw_locn, text
//! placement and CRC) of every image made by the real LVM2 tools, checked
//! against what LVM itself reported about them.

mod support;

use support::fixture::{self, SETS};
use support::lvm_report;
use weir_lvm::label::{self, LABEL_SCAN_SIZE};
use weir_lvm::mda::{self, MDA_HEADER_SIZE};
use weir_lvm::pv_header::{self, PV_EXT_USED};
use weir_lvm::{ReadAt, crc};

#[test]
fn every_image_has_a_valid_label_in_sector_1_with_lvms_crc() {
    for set in SETS {
        for img in fixture::images(set) {
            let head = &img.bytes[..LABEL_SCAN_SIZE];
            let found = label::find(head)
                .unwrap_or_else(|e| panic!("{set}/{}: {e}", img.name))
                .unwrap_or_else(|| panic!("{set}/{}: no label", img.name));
            assert_eq!(found.label.sector, 1, "{set}/{}", img.name);
            // The CRC LVM stored, against our CRC of the same bytes.
            let stored = u32::from_le_bytes(head[512 + 16..512 + 20].try_into().unwrap());
            assert_eq!(found.label.crc, stored);
            assert_eq!(crc::calc(&head[512 + 20..1024]), stored);
        }
    }
}

#[test]
fn pv_headers_match_lvms_report() {
    for set in SETS {
        let report = lvm_report::pvs(set);
        for img in fixture::images(set) {
            let found = label::find(&img.bytes[..LABEL_SCAN_SIZE]).unwrap().unwrap();
            let h = pv_header::parse(found.bytes, found.label.pv_header_offset).unwrap();
            let what = format!("{set}/{}", img.name);
            assert_eq!(h.device_size, img.bytes.len() as u64, "{what}");
            assert_eq!(h.data_areas.len(), 1, "{what}");
            assert_eq!(h.extension.as_ref().map(|e| e.version), Some(2), "{what}");
            let Some(row) = report.iter().find(|r| r.str("pv_name") == img.name) else {
                // Not in the report: the dup set's copy, which LVM never saw.
                assert_eq!(what, "dup/pv1-copy");
                continue;
            };
            assert_eq!(h.uuid, row.uuid("pv_uuid"), "{what}");
            assert_eq!(h.pe_start(), Some(row.num("pe_start")), "{what}");
            assert_eq!(img.bytes.size(), row.num("dev_size"), "{what}");
            assert_eq!(
                h.metadata_areas.len() as u64,
                row.num("pv_mda_count"),
                "{what}"
            );
            let used = h.extension.as_ref().unwrap().flags & PV_EXT_USED != 0;
            assert_eq!(used, !row.str("vg_name").is_empty(), "{what}: PV_EXT_USED");
        }
    }
}

#[test]
fn mda_headers_parse_and_committed_texts_pass_their_checksum() {
    let mut texts = 0;
    for set in SETS {
        let report = lvm_report::pvs(set);
        for img in fixture::images(set) {
            let what = format!("{set}/{}", img.name);
            let found = label::find(&img.bytes[..LABEL_SCAN_SIZE]).unwrap().unwrap();
            let h = pv_header::parse(found.bytes, found.label.pv_header_offset).unwrap();
            let mut not_ignored = 0;
            for area in &h.metadata_areas {
                let mut bytes = [0u8; MDA_HEADER_SIZE];
                img.bytes.read_exact_at(area.offset, &mut bytes).unwrap();
                let mh = mda::parse_header(&bytes, area.offset)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(mh.start, area.offset);
                assert_eq!(mh.size, area.size, "{what}: header and pv_header agree");
                not_ignored += usize::from(!mh.ignored);
                if let Some(locn) = mh.committed() {
                    let text = mda::read_text(&img.bytes, &mh, locn)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(text.len() as u64, locn.size);
                    assert_eq!(text.last(), Some(&0), "{what}: LVM ends texts with a NUL");
                    assert!(
                        text.starts_with(b"weirfx_"),
                        "{what}: starts with the VG name"
                    );
                    texts += 1;
                }
            }
            if let Some(row) = report.iter().find(|r| r.str("pv_name") == img.name) {
                assert_eq!(not_ignored as u64, row.num("pv_mda_used_count"), "{what}");
            }
        }
    }
    assert!(texts > 20, "only {texts} texts checked");
}

#[test]
fn an_orphan_pv_has_an_mda_without_a_text() {
    let img = fixture::image("several", "orphan");
    let found = label::find(&img[..LABEL_SCAN_SIZE]).unwrap().unwrap();
    let h = pv_header::parse(found.bytes, found.label.pv_header_offset).unwrap();
    assert_eq!(h.extension.unwrap().flags & PV_EXT_USED, 0);
    let area = h.metadata_areas[0];
    let mut bytes = [0u8; MDA_HEADER_SIZE];
    img.read_exact_at(area.offset, &mut bytes).unwrap();
    let mh = mda::parse_header(&bytes, area.offset).unwrap();
    assert!(!mh.ignored);
    assert_eq!(mh.committed(), None);
}

#[test]
fn the_wrap_fixture_really_wraps_and_reads_right() {
    let notes = fixture::note("wrap", "wrap");
    let num = |key: &str| -> u64 {
        let i = notes.iter().position(|w| w == key).unwrap();
        notes[i + 1].parse().unwrap()
    };
    let img = fixture::image("wrap", "pv1");
    let mut bytes = [0u8; MDA_HEADER_SIZE];
    img.read_exact_at(4096, &mut bytes).unwrap();
    let mh = mda::parse_header(&bytes, 4096).unwrap();
    let locn = *mh.committed().unwrap();
    assert_eq!(
        (locn.offset, locn.size, mh.size),
        (num("offset"), num("size"), num("mda_size"))
    );

    let at = mda::text_location(&mh, &locn, img.size()).unwrap();
    assert!(at.wraps());
    let wrap = locn.offset + locn.size - mh.size;
    assert_eq!(at.first, (4096 + locn.offset, locn.size - wrap));
    assert_eq!(at.second, (4096 + 512, wrap));

    let text = mda::read_text(&img, &mh, &locn).unwrap();
    // The joint is in the middle of the text, which still reads as one.
    assert!(text.starts_with(b"weirfx_wrap {"));
    assert_eq!(text.last(), Some(&0));
    assert_eq!(crc::calc(&text), locn.checksum);
    // Reading it as if it did not wrap gives other bytes and fails the CRC.
    let flat = &img[(4096 + locn.offset) as usize..][..locn.size as usize];
    assert_ne!(flat, &text[..]);
    assert_ne!(crc::calc(flat), locn.checksum);
    // The same CRC, fed piece by piece.
    let mut c = crc::Crc::new();
    c.update(&img[at.first.0 as usize..][..at.first.1 as usize]);
    c.update(&img[at.second.0 as usize..][..at.second.1 as usize]);
    assert_eq!(c.finish(), locn.checksum);
}
