//! Fuzzes the record frame decoder, `weir_log::codec`.
//!
//! Property: decoding never panics, `check_frame` agrees with `decode`, and
//! whatever decodes re-encodes to exactly the bytes of its frame (a record
//! has one encoding, so nothing unchecked can hide in a frame), and its
//! borrowed view (`FrameRef::record`) holds the same parts. Random bytes
//! almost never pass the CRC, so when the first input byte is odd the
//! target first writes the right length word and CRC, which drives the
//! layout checks behind the CRC.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_log::codec::{check_frame, decode, frame_len};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let mut buf = body.to_vec();
    if mode & 1 == 1 && buf.len() >= 8 {
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        buf[0..4].copy_from_slice(&len.to_le_bytes());
        let crc = crc(&buf);
        buf[4..8].copy_from_slice(&crc.to_le_bytes());
    }
    check(&buf);
});

fn crc(frame: &[u8]) -> u32 {
    // CRC-32C of bytes 0..4 then 8..len, as docs/format.md specifies,
    // computed bit by bit so that the target does not trust the crate.
    let mut c = !0u32;
    for &b in frame[0..4].iter().chain(&frame[8..]) {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn check(buf: &[u8]) {
    let checked = check_frame(buf).map(|f| (f.len, f.index, f.time_ns, f.kind));
    match decode(buf) {
        Ok((r, n)) => {
            assert!(n <= buf.len());
            assert_eq!(checked, Ok((n, r.index, r.time_ns, r.kind)));
            assert_eq!(frame_len(buf), Ok(n));
            let again = r.to_frame().expect("a decoded record encodes");
            assert_eq!(
                again,
                &buf[..n],
                "decoded record does not re-encode to its frame"
            );
            // The borrowed view holds the same parts, and finds each field.
            let view = check_frame(buf).expect("checked above").record();
            assert_eq!(view.to_record(), r);
            for (k, _) in &r.fields {
                assert_eq!(view.field(k), r.field(k));
            }
            // The frame alone decodes the same; one byte short does not.
            assert_eq!(decode(&buf[..n]).map(|x| x.1), Ok(n));
            assert!(decode(&buf[..n - 1]).is_err());
        }
        Err(e) => assert_eq!(checked.map(|_| ()), Err(e)),
    }
}
