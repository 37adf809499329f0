//! Tests of the file-id event decoder, with a test-only encoder that lays
//! events out the way the kernel does (records padded to 4 bytes).

use proptest::prelude::*;

use super::super::{FAN_ATTRIB, FAN_CREATE, FAN_NOFD, FAN_RENAME};
use super::*;

/// An owned record, for the encoder and for comparing decoded events.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OwnedFid {
    fsid: [u32; 2],
    handle_type: i32,
    handle: Vec<u8>,
}

impl OwnedFid {
    fn of(f: &Fid<'_>) -> OwnedFid {
        OwnedFid {
            fsid: f.fsid,
            handle_type: f.handle_type,
            handle: f.handle.to_vec(),
        }
    }
}

/// An event as the tests build and compare it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Ev {
    mask: u64,
    pid: i32,
    dir_name: Option<(OwnedFid, Vec<u8>)>,
    dir: Option<OwnedFid>,
    target: Option<OwnedFid>,
    old: Option<(OwnedFid, Vec<u8>)>,
    new: Option<(OwnedFid, Vec<u8>)>,
}

impl Ev {
    fn of(e: &FidEvent<'_>) -> Ev {
        let dn = |d: &Option<DirName<'_>>| d.map(|d| (OwnedFid::of(&d.dir), d.name.to_vec()));
        Ev {
            mask: e.mask,
            pid: e.pid,
            dir_name: dn(&e.dir_name),
            dir: e.dir.as_ref().map(OwnedFid::of),
            target: e.target.as_ref().map(OwnedFid::of),
            old: dn(&e.old),
            new: dn(&e.new),
        }
    }
}

/// A file-id record of `info_type`, with `name` (and its NUL) when given,
/// padded to 4 bytes.
fn fid_record(info_type: u8, f: &OwnedFid, name: Option<&[u8]>) -> Vec<u8> {
    let mut b = vec![info_type, 0, 0, 0];
    b.extend_from_slice(&f.fsid[0].to_ne_bytes());
    b.extend_from_slice(&f.fsid[1].to_ne_bytes());
    b.extend_from_slice(&(f.handle.len() as u32).to_ne_bytes());
    b.extend_from_slice(&f.handle_type.to_ne_bytes());
    b.extend_from_slice(&f.handle);
    if let Some(name) = name {
        b.extend_from_slice(name);
        b.push(0);
    }
    while b.len() % RECORD_ALIGN != 0 {
        b.push(0);
    }
    let n = b.len() as u16;
    b[2..4].copy_from_slice(&n.to_ne_bytes());
    b
}

/// One event's bytes: metadata with `event_len` set, then `records`.
fn raw_event(mask: u64, pid: i32, records: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&((METADATA_LEN + records.len()) as u32).to_ne_bytes());
    b.push(FANOTIFY_METADATA_VERSION);
    b.push(0);
    b.extend_from_slice(&(METADATA_LEN as u16).to_ne_bytes());
    b.extend_from_slice(&mask.to_ne_bytes());
    b.extend_from_slice(&(-1i32).to_ne_bytes());
    b.extend_from_slice(&pid.to_ne_bytes());
    b.extend_from_slice(records);
    b
}

/// Lays `e` out like the kernel, in the kernel's record order.
fn encode(e: &Ev) -> Vec<u8> {
    let mut r = Vec::new();
    if let Some((d, n)) = &e.dir_name {
        r.extend(fid_record(FAN_EVENT_INFO_TYPE_DFID_NAME, d, Some(n)));
    }
    if let Some(d) = &e.dir {
        r.extend(fid_record(FAN_EVENT_INFO_TYPE_DFID, d, None));
    }
    if let Some((d, n)) = &e.old {
        r.extend(fid_record(FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, d, Some(n)));
    }
    if let Some((d, n)) = &e.new {
        r.extend(fid_record(FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, d, Some(n)));
    }
    if let Some(t) = &e.target {
        r.extend(fid_record(FAN_EVENT_INFO_TYPE_FID, t, None));
    }
    raw_event(e.mask, e.pid, &r)
}

fn decode(b: &[u8]) -> Result<Vec<Ev>, DecodeError> {
    let mut out = Vec::new();
    let n = decode_fid_events(b, |e| out.push(Ev::of(&e)))?;
    assert_eq!(n, out.len());
    Ok(out)
}

fn ext4(ino: u8) -> OwnedFid {
    OwnedFid {
        fsid: [0xe748_ca08, 0xac78_6815],
        handle_type: 1,
        handle: vec![ino, 0x80, 0, 0, 0x67, 0xe7, 0xf3, 0x0b],
    }
}

/// The rename of the research notes: ext4, `mv d/f d/g`, 116 bytes.
#[test]
fn decodes_a_rename_as_the_kernel_lays_it_out() {
    let e = Ev {
        mask: FAN_RENAME,
        pid: 6220,
        old: Some((ext4(1), b"f".to_vec())),
        new: Some((ext4(1), b"g".to_vec())),
        target: Some(ext4(3)),
        ..Ev::default()
    };
    let b = encode(&e);
    assert_eq!(b.len(), 116);
    assert_eq!(decode(&b).unwrap(), [e]);
}

#[test]
fn overflow_is_metadata_only() {
    let b = raw_event(FAN_Q_OVERFLOW, 0, &[]);
    let mut seen = Vec::new();
    assert_eq!(decode_fid_events(&b, |e| seen.push(e)).unwrap(), 1);
    assert!(seen[0].is_overflow());
    assert_eq!(seen[0].fd, FAN_NOFD);
    assert_eq!((seen[0].target, seen[0].dir_name), (None, None));
}

#[test]
fn empty_buffer_is_no_events() {
    assert_eq!(decode(&[]).unwrap(), []);
}

#[test]
fn empty_handle_is_an_unknown_id_and_unknown_records_are_skipped() {
    let none = OwnedFid {
        fsid: [1, 2],
        handle_type: 0xff,
        handle: Vec::new(),
    };
    let mut r = fid_record(FAN_EVENT_INFO_TYPE_DFID_NAME, &ext4(2), Some(b"x"));
    // A pidfd record (type 4) and one of a type not yet defined.
    r.extend_from_slice(&[4, 0, 8, 0, 7, 0, 0, 0]);
    r.extend_from_slice(&[99, 0, 4, 0]);
    r.extend(fid_record(FAN_EVENT_INFO_TYPE_FID, &none, None));
    let got = decode(&raw_event(FAN_CREATE, 1, &r)).unwrap();
    assert_eq!(got[0].target, Some(none));
    assert_eq!(got[0].dir_name, Some((ext4(2), b"x".to_vec())));
}

#[test]
fn a_repeated_record_type_keeps_the_first() {
    let mut r = fid_record(FAN_EVENT_INFO_TYPE_FID, &ext4(1), None);
    r.extend(fid_record(FAN_EVENT_INFO_TYPE_FID, &ext4(2), None));
    let got = decode(&raw_event(FAN_ATTRIB, 1, &r)).unwrap();
    assert_eq!(got[0].target, Some(ext4(1)));
}

#[test]
fn fid_converts_to_an_owned_handle() {
    let f = Fid {
        fsid: [0, 0],
        handle_type: 1,
        handle: &[1, 2],
    };
    assert_eq!(f.to_handle().unwrap().bytes(), [1, 2]);
    let big = [0u8; MAX_HANDLE_SZ + 1];
    let f = Fid { handle: &big, ..f };
    assert!(f.to_handle().is_none());
}

/// A good event to break: a create with a 2-byte name.
fn good() -> Vec<u8> {
    encode(&Ev {
        mask: FAN_CREATE,
        pid: 7,
        dir_name: Some((ext4(1), b"ab".to_vec())),
        target: Some(ext4(2)),
        ..Ev::default()
    })
}

#[test]
fn malformed_events_are_refused_with_their_error() {
    let g = good();
    assert_eq!(g.len(), 24 + 32 + 28);
    let at = g.len();
    let two = [&g[..], &g[..]].concat();
    // A truncated trailing event, at every cut.
    for cut in 1..g.len() {
        let e = decode(&two[..at + cut]).unwrap_err();
        if cut < 24 {
            assert_eq!(e, DecodeError::Truncated { at });
        } else {
            assert!(matches!(e, DecodeError::EventOverrun { at: 84, .. }), "{e}");
        }
    }
    let patch = |off: usize, bytes: &[u8]| {
        let mut b = two.clone();
        b[at + off..at + off + bytes.len()].copy_from_slice(bytes);
        decode(&b).unwrap_err()
    };
    assert_eq!(
        patch(0, &8u32.to_ne_bytes()),
        DecodeError::EventTooShort { at, event_len: 8 }
    );
    assert_eq!(patch(4, &[2]), DecodeError::Version { at, vers: 2 });
    assert_eq!(
        patch(6, &20u16.to_ne_bytes()),
        DecodeError::MetadataLen {
            at,
            metadata_len: 20
        }
    );
    assert_eq!(
        patch(6, &200u16.to_ne_bytes()),
        DecodeError::MetadataLen {
            at,
            metadata_len: 200
        }
    );
    // The first record's len: 0, unaligned, past the event.
    for len in [0u16, 2, 30, 64] {
        assert_eq!(
            patch(26, &len.to_ne_bytes()),
            DecodeError::RecordLen {
                at,
                info_type: FAN_EVENT_INFO_TYPE_DFID_NAME,
                len
            }
        );
    }
    // A record too short for the handle header.
    let mut r = vec![FAN_EVENT_INFO_TYPE_FID, 0, 16, 0];
    r.extend_from_slice(&[0; 12]);
    assert_eq!(
        decode(&raw_event(FAN_ATTRIB, 1, &r)).unwrap_err(),
        DecodeError::FidTooShort { at: 0, len: 16 }
    );
    // handle_bytes past the record, and above MAX_HANDLE_SZ.
    assert_eq!(
        patch(36, &13u32.to_ne_bytes()),
        DecodeError::HandleLen {
            at,
            handle_bytes: 13
        }
    );
    let big = OwnedFid {
        handle: vec![7; MAX_HANDLE_SZ + 4],
        ..ext4(1)
    };
    assert_eq!(
        decode(&raw_event(
            FAN_ATTRIB,
            1,
            &fid_record(FAN_EVENT_INFO_TYPE_FID, &big, None)
        ))
        .unwrap_err(),
        DecodeError::HandleLen {
            at: 0,
            handle_bytes: 132
        }
    );
    // The name's NUL overwritten: no NUL left in the record.
    assert_eq!(
        patch(24 + 28 + 2, b"cd"),
        DecodeError::NameUnterminated { at }
    );
    // A header cut by the end of the event.
    let mut b = raw_event(FAN_ATTRIB, 1, &[99, 0, 4, 0]);
    b.extend_from_slice(&[1, 0]);
    let n = b.len() as u32;
    b[0..4].copy_from_slice(&n.to_ne_bytes());
    assert_eq!(
        decode(&b).unwrap_err(),
        DecodeError::RecordTruncated { at: 0 }
    );
    // The events before a bad one were delivered.
    let mut seen = 0;
    let mut bad = two.clone();
    bad[at + 4] = 9;
    assert!(decode_fid_events(&bad, |_| seen += 1).is_err());
    assert_eq!(seen, 1);
    // And the whole error converts into the crate's.
    let e = crate::Error::from(DecodeError::Truncated { at: 3 });
    assert_eq!(e.errno(), None);
}

fn arb_fid() -> impl Strategy<Value = OwnedFid> {
    (
        any::<[u32; 2]>(),
        any::<i32>(),
        prop::collection::vec(any::<u8>(), 0..=MAX_HANDLE_SZ),
    )
        .prop_map(|(fsid, handle_type, handle)| OwnedFid {
            fsid,
            handle_type,
            handle,
        })
}

/// Any name a directory can hold: 1 to 255 bytes, neither NUL nor `/`,
/// so non-UTF-8 bytes and newlines included.
fn arb_name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(
            any::<u8>().prop_filter("no NUL or /", |b| *b != 0 && *b != b'/'),
            1..=255
        ),
        Just(vec![b'a'; 255]),
        Just(b"a\nb\xff".to_vec()),
        Just(b".".to_vec()),
    ]
}

fn arb_event() -> impl Strategy<Value = Ev> {
    let dn = || prop::option::of((arb_fid(), arb_name()));
    (
        any::<u64>(),
        any::<i32>(),
        dn(),
        prop::option::of(arb_fid()),
        prop::option::of(arb_fid()),
        dn(),
        dn(),
    )
        .prop_map(|(mask, pid, dir_name, dir, target, old, new)| Ev {
            mask,
            pid,
            dir_name,
            dir,
            target,
            old,
            new,
        })
}

proptest! {
    #[test]
    fn well_formed_events_round_trip(evs in prop::collection::vec(arb_event(), 0..6)) {
        let b: Vec<u8> = evs.iter().flat_map(encode).collect();
        prop_assert_eq!(decode(&b).unwrap(), evs);
    }

    #[test]
    fn arbitrary_bytes_never_panic_nor_escape(b in prop::collection::vec(any::<u8>(), 0..512)) {
        check_any(&b);
    }

    #[test]
    fn one_flipped_byte_never_panics_nor_escapes(
        evs in prop::collection::vec(arb_event(), 1..4),
        at in any::<prop::sample::Index>(),
        v in any::<u8>(),
    ) {
        let mut b: Vec<u8> = evs.iter().flat_map(encode).collect();
        let i = at.index(b.len());
        b[i] = v;
        check_any(&b);
    }
}

/// Whatever decodes lies inside `b`: each handle and name is a subslice of
/// it, handles are at most 128 bytes, names hold no NUL, and there is at
/// most one event per 24 bytes.
fn check_any(b: &[u8]) {
    let range = b.as_ptr_range();
    let inside = |s: &[u8]| {
        let r = s.as_ptr_range();
        s.is_empty() || (range.start <= r.start && r.end <= range.end)
    };
    let mut n = 0;
    let res = decode_fid_events(b, |e| {
        n += 1;
        let fids = [e.dir, e.target].into_iter().flatten().chain(
            [e.dir_name, e.old, e.new]
                .into_iter()
                .flatten()
                .map(|d| d.dir),
        );
        for f in fids {
            assert!(inside(f.handle) && f.handle.len() <= MAX_HANDLE_SZ);
        }
        for d in [e.dir_name, e.old, e.new].into_iter().flatten() {
            assert!(inside(d.name) && !d.name.contains(&0));
        }
    });
    assert!(n <= b.len() / METADATA_LEN);
    if let Ok(count) = res {
        assert_eq!(count, n);
    }
}
