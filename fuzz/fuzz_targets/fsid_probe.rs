//! Fuzzes `weir_devices::fsid::probe`, which reads the superblocks of every
//! block device weir reads that is no PV (a USB stick's bytes are
//! anyone's).
//!
//! Property: it never panics and never fails on a byte slice (the end of
//! the device is "not this format", not an error); what it finds is
//! well-formed: a label non-empty, at most `MAX_LABEL` bytes, with no NUL
//! and no trailing whitespace; a UUID in blkid's form for its type. The
//! head alone finds what `probe` finds whenever it finds anything (but
//! for a vfat label, which is in the root directory).
//!
//! Random bytes almost never carry a magic and a valid checksum, so the
//! first input byte may plant one: 1 ext (with metadata_csum and its CRC),
//! 2 xfs (v5, its CRC), 3 btrfs (its CRC), 4 swap, 5 vfat; the fields
//! behind each are the fuzzer's.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_devices::fsid::{self, MAX_LABEL};

fn crc32c_raw(seed: u32, data: &[u8]) -> u32 {
    !crc32c::crc32c_append(!seed, data)
}

fn plant(mode: u8, img: &mut Vec<u8>) {
    let need = match mode {
        3 => 68 * 1024,
        1 | 2 | 4 | 5 => 4096,
        _ => return,
    };
    if img.len() < need {
        img.resize(need, 0);
    }
    match mode {
        1 => {
            let sb = &mut img[1024..2048];
            sb[0x38..0x3a].copy_from_slice(&[0x53, 0xef]);
            sb[0x64] |= 0x04;
            sb[0x65] |= 0x04;
            let c = crc32c_raw(!0, &sb[..0x3fc]);
            sb[0x3fc..0x400].copy_from_slice(&c.to_le_bytes());
        }
        2 => {
            let sb = &mut img[..512];
            sb[..4].copy_from_slice(b"XFSB");
            sb[4..8].copy_from_slice(&4096u32.to_be_bytes());
            sb[88..92].copy_from_slice(&1u32.to_be_bytes());
            sb[100..102].copy_from_slice(&0xb4a5u16.to_be_bytes());
            sb[102..104].copy_from_slice(&512u16.to_be_bytes());
            sb[104..106].copy_from_slice(&512u16.to_be_bytes());
            sb[106..108].copy_from_slice(&8u16.to_be_bytes());
            sb[120..123].copy_from_slice(&[12, 9, 9]);
            sb[224..228].fill(0);
            let c = crc32c::crc32c(sb);
            sb[224..228].copy_from_slice(&c.to_le_bytes());
        }
        3 => {
            let sb = &mut img[64 * 1024..68 * 1024];
            sb[0x40..0x48].copy_from_slice(b"_BHRfS_M");
            sb[0xc4..0xc6].fill(0);
            let c = crc32c::crc32c(&sb[0x20..]);
            sb[..4].copy_from_slice(&c.to_le_bytes());
        }
        4 => {
            img[4086..4096].copy_from_slice(b"SWAPSPACE2");
            img[1024..1028].copy_from_slice(&1u32.to_le_bytes());
            img[1028] |= 1;
        }
        _ => {
            img[0] = 0xeb;
            img[0x52..0x5a].copy_from_slice(b"FAT32   ");
            img[0x0b..0x0d].copy_from_slice(&512u16.to_le_bytes());
            img[0x0d] = 1;
            img[0x0e] |= 1;
            img[0x10] |= 1;
            img[0x15] = 0xf8;
        }
    }
}

fn well_formed_uuid(fstype: &str, u: &str) -> bool {
    let groups: Vec<&str> = u.split('-').collect();
    let lens: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    match fstype {
        "vfat" => {
            lens == [4, 4]
                && u.bytes()
                    .all(|b| b == b'-' || b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
        }
        _ => {
            lens == [8, 4, 4, 4, 12]
                && u.bytes()
                    .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let mut img = body.to_vec();
    plant(mode, &mut img);
    let found = fsid::probe(&img).expect("a byte slice never fails but by its end");
    let head = &img[..img.len().min(fsid::HEAD_SIZE)];
    if let Some(h) = fsid::probe_head(head) {
        let f = found.as_ref().expect("the head's find is the probe's");
        assert_eq!((f.fstype, &f.uuid), (h.fstype, &h.uuid));
        // A vfat label is in the root directory, which the head may not hold.
        if h.fstype != "vfat" {
            assert_eq!(f.label, h.label);
        }
    }
    let Some(id) = found else { return };
    if let Some(label) = &id.label {
        assert!(!label.is_empty() && label.len() <= MAX_LABEL);
        assert!(!label.contains(&0));
        assert!(!b" \t\n\x0b\x0c\r".contains(label.last().unwrap()));
    }
    if let Some(u) = &id.uuid {
        assert!(well_formed_uuid(id.fstype, u), "{id:?}");
    }
});
