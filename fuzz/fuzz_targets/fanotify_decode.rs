//! Fuzzes the fanotify mount event decoder,
//! `weir_sys::fanotify::decode_events_with_fds`.
//!
//! Property: decoding never panics nor loops; it yields at most one event
//! and one fd per 24 bytes; `decode_events` agrees with it; a buffer that
//! decodes, repeated, decodes to its events repeated (events are
//! self-delimiting). When the first input byte is odd the target builds
//! well-formed events from the input (its own encoder of the kernel
//! layout), checks they decode back exactly, then overwrites one
//! input-chosen byte to drive the length checks with near-valid buffers.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_sys::fanotify::{
    FAN_EVENT_INFO_TYPE_MNT, FAN_MNT_ATTACH, FAN_MNT_DETACH, FAN_Q_OVERFLOW,
    FANOTIFY_METADATA_VERSION, MountEvent, decode_events, decode_events_with_fds,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        check(body);
        return;
    }
    let (buf, want) = encode(body);
    let mut out = Vec::new();
    let mut fds = Vec::new();
    decode_events_with_fds(&buf, &mut out, &mut fds).expect("well-formed events decode");
    assert_eq!(out, want);
    assert!(fds.is_empty());
    check(&buf);
    if let [p0, p1, v, ..] = *body
        && !buf.is_empty()
    {
        let mut bad = buf;
        let at = usize::from(u16::from_le_bytes([p0, p1])) % bad.len();
        bad[at] = v;
        check(&bad);
    }
});

/// The invariants of any decode.
fn check(buf: &[u8]) {
    let mut out = Vec::new();
    let mut fds = Vec::new();
    let res = decode_events_with_fds(buf, &mut out, &mut fds);
    assert!(out.len() <= buf.len() / 24);
    assert!(fds.len() <= buf.len() / 24);
    assert!(fds.iter().all(|&fd| fd >= 0));
    let mut plain = Vec::new();
    assert_eq!(decode_events(buf, &mut plain), res);
    assert_eq!(plain, out);
    if res.is_ok() {
        let twice = [buf, buf].concat();
        let mut again = Vec::new();
        decode_events(&twice, &mut again).expect("a repeated good buffer decodes");
        assert_eq!(again, [&out[..], &out[..]].concat());
    }
}

/// Well-formed events, one per input chunk: a kind byte, then an 8-byte id
/// (zero-padded at the end). Some events get an info record of another
/// type before the mount record, as later kernels may add.
fn encode(body: &[u8]) -> (Vec<u8>, Vec<MountEvent>) {
    let mut buf = Vec::new();
    let mut want = Vec::new();
    for chunk in body.chunks(9) {
        let kind = chunk[0];
        let mut idb = [0u8; 8];
        idb[..chunk.len() - 1].copy_from_slice(&chunk[1..]);
        let id = u64::from_le_bytes(idb);
        let (mask, ev) = match kind % 5 {
            0 => (FAN_MNT_ATTACH, Some(MountEvent::Attach(id))),
            1 => (FAN_MNT_DETACH, Some(MountEvent::Detach(id))),
            2 => (FAN_MNT_ATTACH | FAN_MNT_DETACH, Some(MountEvent::Move(id))),
            3 => (FAN_Q_OVERFLOW, Some(MountEvent::Overflow)),
            // An event kind the decoder does not watch: skipped.
            _ => (0x2, None),
        };
        let mut records = Vec::new();
        if kind & 0x80 != 0 {
            // A FID-like record (type 1) of 12 bytes.
            records.extend_from_slice(&[1, 0]);
            records.extend_from_slice(&12u16.to_ne_bytes());
            records.extend_from_slice(&[0xEE; 8]);
        }
        if mask & (FAN_MNT_ATTACH | FAN_MNT_DETACH) != 0 {
            records.extend_from_slice(&[FAN_EVENT_INFO_TYPE_MNT, 0]);
            records.extend_from_slice(&16u16.to_ne_bytes());
            records.extend_from_slice(&[0; 4]);
            records.extend_from_slice(&id.to_ne_bytes());
        }
        let event_len = u32::try_from(24 + records.len()).unwrap();
        buf.extend_from_slice(&event_len.to_ne_bytes());
        buf.push(FANOTIFY_METADATA_VERSION);
        buf.push(0);
        buf.extend_from_slice(&24u16.to_ne_bytes());
        buf.extend_from_slice(&mask.to_ne_bytes());
        buf.extend_from_slice(&(-1i32).to_ne_bytes());
        buf.extend_from_slice(&1i32.to_ne_bytes());
        buf.extend_from_slice(&records);
        want.extend(ev);
    }
    (buf, want)
}
