//! Fuzzes the statmount answer decoder, `weir_sys::statmount::decode`.
//!
//! Property: decoding never panics; whatever decodes has a field exactly
//! for each of its mask bits, strings without NUL, and ignores bytes past
//! `size`. Random bytes rarely have a sane `size`, so when the first input
//! byte is odd the target builds a well-formed answer from the input (its
//! own encoder of the 6.18 layout) and checks the decoder returns exactly
//! what was encoded; then one input-chosen byte may be overwritten, which
//! drives the bounds checks with near-valid buffers.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_sys::statmount::{StatMount, decode, mask};

/// `sizeof(struct statmount)`: where the strings start.
const FIXED: usize = 512;
/// The string fields: mask bit and offset of the `u32` pointing into `str`.
const STRINGS: [(u64, usize); 6] = [
    (mask::MNT_ROOT, 104),
    (mask::MNT_POINT, 108),
    (mask::FS_TYPE, 36),
    (mask::MNT_OPTS, 4),
    (mask::FS_SUBTYPE, 120),
    (mask::SB_SOURCE, 124),
];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        check(body);
        return;
    }
    let (buf, strings) = encode(body);
    let sm = decode(&buf).expect("a well-formed answer decodes");
    for ((bit, _), want) in STRINGS.iter().zip(&strings) {
        assert_eq!(field(&sm, *bit), (sm.mask & bit != 0).then_some(&want[..]));
    }
    assert_eq!(
        sm.mnt.map(|m| m.id),
        (sm.mask & mask::MNT_BASIC != 0).then(|| u64_at(&buf, 40))
    );
    check(&buf);
    // One overwritten byte, position and value from the input's first bytes.
    if let [p0, p1, v, ..] = *body {
        let mut bad = buf;
        let at = usize::from(u16::from_le_bytes([p0, p1])) % bad.len();
        bad[at] = v;
        check(&bad);
    }
});

/// The invariants of any decode.
fn check(buf: &[u8]) {
    let Ok(sm) = decode(buf) else {
        return;
    };
    assert_eq!(sm.mask, u64_at(buf, 8));
    for (bit, _) in STRINGS {
        let f = field(&sm, bit);
        assert_eq!(f.is_some(), sm.mask & bit != 0);
        assert!(!f.unwrap_or_default().contains(&0));
    }
    assert_eq!(sm.sb.is_some(), sm.mask & mask::SB_BASIC != 0);
    assert_eq!(sm.mnt.is_some(), sm.mask & mask::MNT_BASIC != 0);
    assert_eq!(
        sm.propagate_from.is_some(),
        sm.mask & mask::PROPAGATE_FROM != 0
    );
    assert_eq!(sm.mnt_ns_id.is_some(), sm.mask & mask::MNT_NS_ID != 0);
    // Bytes past `size` are not part of the answer.
    let mut longer = buf.to_vec();
    longer.extend_from_slice(&[0xA5; 9]);
    assert_eq!(decode(&longer).as_ref(), Ok(&sm));
}

fn field(sm: &StatMount, bit: u64) -> Option<&[u8]> {
    match bit {
        mask::MNT_ROOT => sm.mnt_root.as_deref(),
        mask::MNT_POINT => sm.mnt_point.as_deref(),
        mask::FS_TYPE => sm.fs_type.as_deref(),
        mask::MNT_OPTS => sm.mnt_opts.as_deref(),
        mask::FS_SUBTYPE => sm.fs_subtype.as_deref(),
        _ => sm.sb_source.as_deref(),
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

/// A well-formed answer: the fixed part's bytes from the input (the mask
/// first), then the input's remaining bytes split at NULs as the six
/// strings. Returns the buffer and the strings encoded.
fn encode(body: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let (fixed_in, rest) = body.split_at(body.len().min(FIXED - 8));
    let mut buf = vec![0u8; FIXED];
    buf[8..8 + fixed_in.len()].copy_from_slice(fixed_in);
    let mut parts = rest.split(|&b| b == 0);
    let strings: Vec<Vec<u8>> = (0..STRINGS.len())
        .map(|_| parts.next().unwrap_or_default().to_vec())
        .collect();
    let m = u64_at(&buf, 8);
    let mut strs = Vec::new();
    for ((bit, off), s) in STRINGS.iter().zip(&strings) {
        if m & bit != 0 {
            let at = u32::try_from(strs.len()).unwrap();
            buf[*off..off + 4].copy_from_slice(&at.to_ne_bytes());
            strs.extend_from_slice(s);
            strs.push(0);
        }
    }
    buf.extend_from_slice(&strs);
    let size = u32::try_from(buf.len()).unwrap();
    buf[0..4].copy_from_slice(&size.to_ne_bytes());
    (buf, strings)
}
