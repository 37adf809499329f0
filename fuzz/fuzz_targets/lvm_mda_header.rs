//! Fuzzes `weir_lvm::mda`: the mda_header and its raw_locn slots, the
//! placement of a text in the circular buffer (wrap-around included) and
//! reading it, with the input as the whole device and the header at 0.
//!
//! Property: nothing panics; a header that parses re-validates (CRC over
//! bytes 4..512, magic, version 1, `start` 0, `size` >= 512, no NULL slot
//! in the list); every text location accepted lies in the buffer and on the
//! device, its wrapped piece ends before its first piece starts, and it is
//! at most `TEXT_SIZE_MAX`; a text read has its stated size and CRC. Random
//! bytes almost never pass the CRC and magic, so the first input byte may
//! ask the target to write the magic, version and start (bit 1) and to
//! recompute the CRC (bit 0) before parsing.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_lvm::crc;
use weir_lvm::mda::{self, MAGIC, MDA_HEADER_SIZE, TEXT_SIZE_MAX, VERSION};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let mut dev = body.to_vec();
    if dev.len() < MDA_HEADER_SIZE {
        dev.resize(MDA_HEADER_SIZE, 0);
    }
    if mode & 2 == 2 {
        dev[4..20].copy_from_slice(&MAGIC);
        dev[20..24].copy_from_slice(&VERSION.to_le_bytes());
        dev[24..32].copy_from_slice(&0u64.to_le_bytes());
    }
    if mode & 1 == 1 {
        let c = crc::calc(&dev[4..MDA_HEADER_SIZE]);
        dev[..4].copy_from_slice(&c.to_le_bytes());
    }
    let bytes: &[u8; MDA_HEADER_SIZE] = dev.first_chunk().expect("resized");
    let Ok(h) = mda::parse_header(bytes, 0) else {
        return;
    };
    assert_eq!(crc::calc(&bytes[4..]), h.checksum);
    assert_eq!(bytes[4..20], MAGIC);
    assert_eq!(h.start, 0);
    assert!(h.size >= MDA_HEADER_SIZE as u64);
    assert!(h.raw_locns.iter().all(|l| l.offset != 0));
    let device = dev.len() as u64;
    for locn in &h.raw_locns {
        let Ok(at) = mda::text_location(&h, locn, device) else {
            assert!(mda::read_text(&dev, &h, locn).is_err());
            continue;
        };
        assert_eq!(at.size(), locn.size);
        assert!(locn.size <= TEXT_SIZE_MAX);
        assert!(at.first.0 >= 512 && at.first.0 + at.first.1 <= h.size);
        assert_eq!(at.second.0, 512);
        assert!(at.second.0 + at.second.1 <= at.first.0);
        assert!(at.first.0 + at.first.1 <= device && at.second.0 + at.second.1 <= device);
        if let Ok(text) = mda::read_text(&dev, &h, locn) {
            assert_eq!(text.len() as u64, locn.size);
            assert_eq!(crc::calc(&text), locn.checksum);
        }
    }
});
