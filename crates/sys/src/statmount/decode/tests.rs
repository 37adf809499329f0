//! Tests of the statmount decoder, with a test-only encoder that lays a
//! [`StatMount`] out the way the kernel does.

use proptest::prelude::*;

use super::*;

const DECODED: u64 = mask::DECODED;

fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Lays `sm` out like the kernel: fixed part, then the strings, each with
/// its NUL. `sm.mask` is written as is, so it must agree with the `Option`s
/// for a round trip. Unset string fields get an offset far outside the
/// buffer, which the decoder must not look at.
fn encode(sm: &StatMount) -> Vec<u8> {
    let mut b = vec![0u8; FIXED_SIZE];
    let mut strs = Vec::new();
    put64(&mut b, off::MASK, sm.mask);
    if let Some(s) = &sm.sb {
        put32(&mut b, off::SB_DEV_MAJOR, s.dev_major);
        put32(&mut b, off::SB_DEV_MINOR, s.dev_minor);
        put64(&mut b, off::SB_MAGIC, s.magic);
        put32(&mut b, off::SB_FLAGS, s.flags);
    }
    if let Some(m) = &sm.mnt {
        put64(&mut b, off::MNT_ID, m.id);
        put64(&mut b, off::MNT_PARENT_ID, m.parent_id);
        put32(&mut b, off::MNT_ID_OLD, m.id_old);
        put32(&mut b, off::MNT_PARENT_ID_OLD, m.parent_id_old);
        put64(&mut b, off::MNT_ATTR, m.attr);
        put64(&mut b, off::MNT_PROPAGATION, m.propagation);
        put64(&mut b, off::MNT_PEER_GROUP, m.peer_group);
        put64(&mut b, off::MNT_MASTER, m.master);
    }
    put64(&mut b, off::PROPAGATE_FROM, sm.propagate_from.unwrap_or(0));
    put64(&mut b, off::MNT_NS_ID, sm.mnt_ns_id.unwrap_or(0));
    let fields = [
        (off::MNT_ROOT, &sm.mnt_root),
        (off::MNT_POINT, &sm.mnt_point),
        (off::FS_TYPE, &sm.fs_type),
        (off::MNT_OPTS, &sm.mnt_opts),
        (off::FS_SUBTYPE, &sm.fs_subtype),
        (off::SB_SOURCE, &sm.sb_source),
    ];
    for (o, s) in fields {
        match s {
            Some(s) => {
                put32(&mut b, o, strs.len() as u32);
                strs.extend_from_slice(s);
                strs.push(0);
            }
            None => put32(&mut b, o, u32::MAX),
        }
    }
    b.extend_from_slice(&strs);
    let size = b.len() as u32;
    put32(&mut b, off::SIZE, size);
    b
}

fn sample() -> StatMount {
    StatMount {
        mask: mask::SB_BASIC
            | mask::MNT_BASIC
            | mask::MNT_ROOT
            | mask::MNT_POINT
            | mask::FS_TYPE
            | mask::MNT_OPTS
            | mask::SB_SOURCE,
        sb: Some(SbBasic {
            dev_major: 0,
            dev_minor: 52,
            magic: 0x0102_1994,
            flags: super::super::sb::LAZYTIME,
        }),
        mnt: Some(MntBasic {
            id: 0x8000_0123,
            parent_id: 0x8000_0001,
            id_old: 291,
            parent_id_old: 1,
            attr: super::super::attr::NOSUID | super::super::attr::NODEV,
            propagation: super::super::propagation::MS_SHARED,
            peer_group: 7,
            master: 0,
        }),
        mnt_root: Some(b"/".to_vec()),
        mnt_point: Some(b"/run/weir test".to_vec()),
        fs_type: Some(b"tmpfs".to_vec()),
        mnt_opts: Some(b"size=1024k,mode=755".to_vec()),
        sb_source: Some(b"weir".to_vec()),
        ..StatMount::default()
    }
}

fn malformed(r: Result<StatMount>) -> &'static str {
    match r {
        Err(Error::Malformed { what }) => what,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn decodes_a_kernel_like_buffer() {
    let sm = sample();
    let b = encode(&sm);
    assert_eq!(decode(&b).unwrap(), sm);
}

#[test]
fn ignores_bytes_after_size() {
    let sm = sample();
    let mut b = encode(&sm);
    b.extend_from_slice(&[0xAA; 100]);
    assert_eq!(decode(&b).unwrap(), sm);
}

#[test]
fn only_set_bits_give_fields() {
    let mut sm = sample();
    let mut b = encode(&sm);
    // Clear MNT_BASIC and MNT_OPTS in the answer: their bytes stay, but the
    // decoder must drop them.
    sm.mask &= !(mask::MNT_BASIC | mask::MNT_OPTS);
    put64(&mut b, off::MASK, sm.mask);
    let d = decode(&b).unwrap();
    assert_eq!(d.mnt, None);
    assert_eq!(d.mnt_opts, None);
    assert_eq!(d.fs_type.as_deref(), Some(&b"tmpfs"[..]));
}

#[test]
fn unset_strings_with_garbage_offsets_are_ignored() {
    let sm = StatMount {
        mask: mask::FS_TYPE,
        fs_type: Some(b"proc".to_vec()),
        ..StatMount::default()
    };
    let b = encode(&sm);
    assert_eq!(u32_at(&b, off::MNT_OPTS), Some(u32::MAX));
    assert_eq!(decode(&b).unwrap(), sm);
}

#[test]
fn empty_string_is_valid() {
    let sm = StatMount {
        mask: mask::SB_SOURCE,
        sb_source: Some(Vec::new()),
        ..StatMount::default()
    };
    assert_eq!(decode(&encode(&sm)).unwrap(), sm);
}

#[test]
fn short_buffer_is_malformed() {
    let b = encode(&sample());
    assert_eq!(
        malformed(decode(&[])),
        "statmount buffer shorter than struct statmount"
    );
    assert_eq!(
        malformed(decode(&b[..FIXED_SIZE - 1])),
        "statmount buffer shorter than struct statmount"
    );
    // Truncated strings: size now points past the end.
    assert_eq!(
        malformed(decode(&b[..b.len() - 1])),
        "statmount size beyond the buffer"
    );
}

#[test]
fn hostile_size_is_malformed() {
    let mut b = encode(&sample());
    put32(&mut b, off::SIZE, 0);
    assert_eq!(
        malformed(decode(&b)),
        "statmount size smaller than struct statmount"
    );
    put32(&mut b, off::SIZE, FIXED_SIZE as u32 - 1);
    assert_eq!(
        malformed(decode(&b)),
        "statmount size smaller than struct statmount"
    );
    put32(&mut b, off::SIZE, u32::MAX);
    assert_eq!(malformed(decode(&b)), "statmount size beyond the buffer");
}

#[test]
fn string_offset_out_of_range_is_malformed() {
    let mut b = encode(&sample());
    let strs_len = (b.len() - FIXED_SIZE) as u32;
    for bad in [strs_len, strs_len + 1, u32::MAX] {
        put32(&mut b, off::FS_TYPE, bad);
        assert_eq!(
            malformed(decode(&b)),
            "statmount string offset beyond the buffer",
            "offset {bad}"
        );
    }
}

#[test]
fn string_without_nul_before_size_is_malformed() {
    let sm = StatMount {
        mask: mask::MNT_POINT,
        mnt_point: Some(b"/mnt".to_vec()),
        ..StatMount::default()
    };
    let mut b = encode(&sm);
    // Cut the NUL off with `size` but leave it in the buffer: it must not
    // be found past `size`.
    let size = b.len() as u32 - 1;
    put32(&mut b, off::SIZE, size);
    assert_eq!(malformed(decode(&b)), "statmount string without NUL");
    // Without any string bytes at all (size == 512).
    put32(&mut b, off::SIZE, FIXED_SIZE as u32);
    put32(&mut b, off::MNT_POINT, 0);
    assert_eq!(
        malformed(decode(&b)),
        "statmount string offset beyond the buffer"
    );
}

fn bytes_field() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(proptest::collection::vec(1u8..=255, 0..40))
}

prop_compose! {
    fn arb_statmount()(
        extra in any::<u64>(),
        sb in proptest::option::of((any::<u32>(), any::<u32>(), any::<u64>(), any::<u32>())),
        mnt in proptest::option::of((any::<[u64; 2]>(), any::<[u32; 2]>(), any::<[u64; 4]>())),
        propagate_from in proptest::option::of(any::<u64>()),
        mnt_ns_id in proptest::option::of(any::<u64>()),
        strs in (bytes_field(), bytes_field(), bytes_field(), bytes_field(), bytes_field(), bytes_field()),
    ) -> StatMount {
        let (mnt_root, mnt_point, fs_type, mnt_opts, fs_subtype, sb_source) = strs;
        let bit = |set: bool, b: u64| if set { b } else { 0 };
        let mask = (extra & !DECODED)
            | bit(sb.is_some(), mask::SB_BASIC)
            | bit(mnt.is_some(), mask::MNT_BASIC)
            | bit(propagate_from.is_some(), mask::PROPAGATE_FROM)
            | bit(mnt_root.is_some(), mask::MNT_ROOT)
            | bit(mnt_point.is_some(), mask::MNT_POINT)
            | bit(fs_type.is_some(), mask::FS_TYPE)
            | bit(mnt_ns_id.is_some(), mask::MNT_NS_ID)
            | bit(mnt_opts.is_some(), mask::MNT_OPTS)
            | bit(fs_subtype.is_some(), mask::FS_SUBTYPE)
            | bit(sb_source.is_some(), mask::SB_SOURCE);
        StatMount {
            mask,
            sb: sb.map(|(dev_major, dev_minor, magic, flags)| SbBasic { dev_major, dev_minor, magic, flags }),
            mnt: mnt.map(|([id, parent_id], [id_old, parent_id_old], [attr, propagation, peer_group, master])| MntBasic {
                id, parent_id, id_old, parent_id_old, attr, propagation, peer_group, master,
            }),
            propagate_from,
            mnt_root,
            mnt_point,
            fs_type,
            mnt_ns_id,
            mnt_opts,
            fs_subtype,
            sb_source,
        }
    }
}

proptest! {
    #[test]
    fn round_trips(sm in arb_statmount()) {
        prop_assert_eq!(decode(&encode(&sm)).unwrap(), sm);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = decode(&b);
    }

    /// Random fixed parts with a sane `size`, so the string checks are
    /// reached with random offsets and mask bits.
    #[test]
    fn random_fields_with_valid_size_never_panic(
        mut b in proptest::collection::vec(any::<u8>(), FIXED_SIZE..FIXED_SIZE + 64),
        small_offsets in any::<bool>(),
    ) {
        let size = b.len() as u32;
        put32(&mut b, off::SIZE, size);
        if small_offsets {
            for o in [off::MNT_OPTS, off::FS_TYPE, off::MNT_ROOT, off::MNT_POINT, off::FS_SUBTYPE, off::SB_SOURCE] {
                let v = u32_at(&b, o).unwrap() % 80;
                put32(&mut b, o, v);
            }
        }
        if let Ok(sm) = decode(&b) {
            for s in [&sm.mnt_root, &sm.mnt_point, &sm.fs_type, &sm.mnt_opts, &sm.fs_subtype, &sm.sb_source].into_iter().flatten() {
                prop_assert!(!s.contains(&0));
            }
            prop_assert_eq!(sm.mask, u64_at(&b, off::MASK).unwrap());
        }
    }
}
