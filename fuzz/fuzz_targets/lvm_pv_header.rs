//! Fuzzes `weir_lvm::pv_header::parse`: the uuid, the NULL-terminated
//! area lists and the extension that follow the label in its sector.
//!
//! Property: it never panics; whatever parses has a 32-character
//! alphanumeric uuid, no NULL entry inside a list, and every list with its
//! terminator inside the 512-byte sector; written back at the same offset
//! (the target's own encoder of the layout) it parses to the same header.
//! The first four input bytes are the label's `offset_xl` (usually 32, as
//! LVM writes it, when the first byte is even), the rest the sector.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_lvm::label::LABEL_SIZE;
use weir_lvm::pv_header::{self, DiskLocn, PvHeader};

fn put_list(b: &mut [u8; LABEL_SIZE], at: &mut usize, list: &[DiskLocn]) {
    for d in list {
        b[*at..*at + 8].copy_from_slice(&d.offset.to_le_bytes());
        b[*at + 8..*at + 16].copy_from_slice(&d.size.to_le_bytes());
        *at += 16;
    }
    *at += 16; // the terminator, already zero
}

fn encode(h: &PvHeader, offset: usize) -> [u8; LABEL_SIZE] {
    let mut b = [0u8; LABEL_SIZE];
    b[offset..offset + 32].copy_from_slice(&h.uuid.0);
    b[offset + 32..offset + 40].copy_from_slice(&h.device_size.to_le_bytes());
    let mut at = offset + 40;
    put_list(&mut b, &mut at, &h.data_areas);
    put_list(&mut b, &mut at, &h.metadata_areas);
    if let Some(ext) = &h.extension {
        b[at..at + 4].copy_from_slice(&ext.version.to_le_bytes());
        b[at + 4..at + 8].copy_from_slice(&ext.flags.to_le_bytes());
        at += 8;
        put_list(&mut b, &mut at, &ext.bootloader_areas);
    }
    b
}

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<4>() else {
        return;
    };
    let offset = if head[0] & 1 == 0 {
        32
    } else {
        u32::from_le_bytes(*head)
    };
    let mut sector = [0u8; LABEL_SIZE];
    let n = body.len().min(LABEL_SIZE);
    sector[..n].copy_from_slice(&body[..n]);
    let Ok(h) = pv_header::parse(&sector, offset) else {
        return;
    };
    assert!(h.uuid.0.iter().all(u8::is_ascii_alphanumeric));
    let lists = h.data_areas.len() + h.metadata_areas.len();
    let mut end = offset as usize + 40 + 16 * (lists + 2);
    assert!(
        h.data_areas
            .iter()
            .chain(&h.metadata_areas)
            .all(|d| d.offset != 0)
    );
    if let Some(ext) = &h.extension {
        assert_ne!(ext.version, 0);
        assert!(ext.bootloader_areas.iter().all(|d| d.offset != 0));
        end += 8 + 16 * (ext.bootloader_areas.len() + 1);
    }
    assert!(end <= LABEL_SIZE);
    let again = pv_header::parse(&encode(&h, offset as usize), offset).expect("re-encoded parses");
    assert_eq!(again, h);
});
