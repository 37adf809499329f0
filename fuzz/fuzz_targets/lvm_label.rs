//! Fuzzes `weir_lvm::label::find`, which reads the first 2 KiB of every
//! block device weir sees, LVM or not (a USB stick's bytes are anyone's).
//!
//! Property: it never panics; `Ok(None)` exactly when no whole sector of
//! the first four starts with `LABELONE`; a label it returns re-validates
//! (id, `sector_xl` equal to its sector, CRC recomputed over bytes 20..512,
//! type `LVM2 001`) and no earlier sector holds a valid one; an error comes
//! only with some `LABELONE`. Random bytes almost never carry a valid CRC,
//! so when the first input byte is odd the target recomputes the CRC of
//! every sector that starts with `LABELONE`, which lets the later checks run.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_lvm::crc;
use weir_lvm::label::{self, LABEL_ID, LABEL_SCAN_SIZE, LABEL_SIZE, LABEL_TYPE};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let mut head = body[..body.len().min(LABEL_SCAN_SIZE)].to_vec();
    if mode & 1 == 1 {
        for sector in head.chunks_exact_mut(LABEL_SIZE) {
            if sector[..8] == LABEL_ID {
                let c = crc::calc(&sector[20..]);
                sector[16..20].copy_from_slice(&c.to_le_bytes());
            }
        }
    }
    let sectors: Vec<&[u8]> = head.chunks_exact(LABEL_SIZE).collect();
    let any_id = sectors.iter().any(|s| s[..8] == LABEL_ID);
    match label::find(&head) {
        Ok(None) => assert!(!any_id),
        Err(_) => assert!(any_id),
        Ok(Some(found)) => {
            let b = found.bytes;
            let n = usize::try_from(found.label.sector).expect("small");
            assert!(n < sectors.len());
            assert_eq!(&b[..], sectors[n]);
            assert_eq!(b[..8], LABEL_ID);
            assert_eq!(
                u64::from_le_bytes(b[8..16].try_into().unwrap()),
                found.label.sector
            );
            assert_eq!(
                u32::from_le_bytes(b[16..20].try_into().unwrap()),
                found.label.crc
            );
            assert_eq!(crc::calc(&b[20..]), found.label.crc);
            assert_eq!(b[24..32], LABEL_TYPE);
            for (i, s) in sectors[..n].iter().enumerate() {
                let s: &[u8; LABEL_SIZE] = s.first_chunk().unwrap();
                assert!(!matches!(label::check(i as u64, s), Ok(Some(_))));
            }
        }
    }
});
