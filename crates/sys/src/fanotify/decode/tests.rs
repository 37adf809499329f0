//! Tests of the fanotify event decoder, with a test-only encoder that lays
//! events out the way the kernel does.

use proptest::prelude::*;

use super::*;

/// One event's metadata, for building hostile buffers.
fn meta(event_len: u32, mask: u64, fd: i32) -> Vec<u8> {
    let mut b = Vec::with_capacity(METADATA_LEN);
    b.extend_from_slice(&event_len.to_ne_bytes());
    b.push(FANOTIFY_METADATA_VERSION);
    b.push(0);
    b.extend_from_slice(&(METADATA_LEN as u16).to_ne_bytes());
    b.extend_from_slice(&mask.to_ne_bytes());
    b.extend_from_slice(&fd.to_ne_bytes());
    b.extend_from_slice(&4242i32.to_ne_bytes());
    b
}

/// A mount info record.
fn mnt_record(id: u64) -> Vec<u8> {
    let mut b = vec![FAN_EVENT_INFO_TYPE_MNT, 0];
    b.extend_from_slice(&(INFO_MNT_LEN as u16).to_ne_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&id.to_ne_bytes());
    b
}

/// An info record of another type (e.g. a FID record, type 1) with `n`
/// payload bytes.
fn other_record(info_type: u8, n: usize) -> Vec<u8> {
    let mut b = vec![info_type, 0];
    b.extend_from_slice(&((INFO_HEADER_LEN + n) as u16).to_ne_bytes());
    b.extend(std::iter::repeat_n(0xEE, n));
    b
}

/// One event: metadata with the right `event_len`, then `records`.
fn event(mask: u64, fd: i32, records: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = records.concat();
    let mut b = meta((METADATA_LEN + body.len()) as u32, mask, fd);
    b.extend_from_slice(&body);
    b
}

/// Lays out `events` like the kernel.
fn encode(events: &[MountEvent]) -> Vec<u8> {
    let mut b = Vec::new();
    for e in events {
        b.extend(match *e {
            MountEvent::Attach(id) => event(FAN_MNT_ATTACH, FAN_NOFD_, &[mnt_record(id)]),
            MountEvent::Detach(id) => event(FAN_MNT_DETACH, FAN_NOFD_, &[mnt_record(id)]),
            MountEvent::Move(id) => event(
                FAN_MNT_ATTACH | FAN_MNT_DETACH,
                FAN_NOFD_,
                &[mnt_record(id)],
            ),
            MountEvent::Overflow => event(FAN_Q_OVERFLOW, FAN_NOFD_, &[]),
        });
    }
    b
}

const FAN_NOFD_: i32 = super::super::FAN_NOFD;

fn decode(b: &[u8]) -> Result<Vec<MountEvent>> {
    let mut out = Vec::new();
    decode_events(b, &mut out).map(|()| out)
}

fn malformed(r: Result<Vec<MountEvent>>) -> &'static str {
    match r {
        Err(Error::Malformed { what }) => what,
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn decodes_attach_detach_move_overflow() {
    let evs = [
        MountEvent::Attach(0x8000_0017),
        MountEvent::Move(0x8000_0017),
        MountEvent::Detach(0x8000_0017),
        MountEvent::Overflow,
    ];
    let b = encode(&evs);
    assert_eq!(b.len(), 3 * 40 + 24);
    assert_eq!(decode(&b).unwrap(), evs);
}

#[test]
fn empty_buffer_is_no_events() {
    assert_eq!(decode(&[]).unwrap(), []);
}

#[test]
fn overflow_is_metadata_only() {
    let b = event(FAN_Q_OVERFLOW, -1, &[]);
    assert_eq!(b.len(), 24);
    assert_eq!(decode(&b).unwrap(), [MountEvent::Overflow]);
}

#[test]
fn appends_to_out() {
    let mut out = vec![MountEvent::Overflow];
    decode_events(&encode(&[MountEvent::Attach(5)]), &mut out).unwrap();
    assert_eq!(out, [MountEvent::Overflow, MountEvent::Attach(5)]);
}

#[test]
fn skips_other_info_records_and_event_kinds() {
    let mut b = event(
        FAN_MNT_ATTACH,
        -1,
        &[other_record(1, 20), mnt_record(9), other_record(6, 0)],
    );
    // An event of a kind we do not watch (FAN_MODIFY = 0x2): skipped.
    b.extend(event(0x2, -1, &[other_record(1, 12)]));
    b.extend(encode(&[MountEvent::Detach(10)]));
    assert_eq!(
        decode(&b).unwrap(),
        [MountEvent::Attach(9), MountEvent::Detach(10)]
    );
}

#[test]
fn reports_fds_so_they_can_be_closed() {
    let mut b = event(FAN_MNT_ATTACH, 7, &[mnt_record(1)]);
    b.extend(event(FAN_MNT_DETACH, -1, &[mnt_record(2)]));
    b.extend(event(0x2, 9, &[]));
    let (mut out, mut fds) = (Vec::new(), Vec::new());
    decode_events_with_fds(&b, &mut out, &mut fds).unwrap();
    assert_eq!(out, [MountEvent::Attach(1), MountEvent::Detach(2)]);
    assert_eq!(fds, [7, 9]);
    // Reported even when the event turns out malformed after its lengths.
    let mut bad = event(FAN_MNT_ATTACH, 11, &[]);
    bad[4] = 2;
    fds.clear();
    assert!(decode_events_with_fds(&bad, &mut out, &mut fds).is_err());
    assert_eq!(fds, [11]);
}

#[test]
fn truncated_event_is_malformed() {
    let b = encode(&[MountEvent::Attach(1), MountEvent::Attach(2)]);
    for cut in [1, 23, 24, 39] {
        let r = decode(&b[..40 + cut]);
        assert!(
            matches!(r, Err(Error::Malformed { .. })),
            "cut {cut}: {r:?}"
        );
    }
    // The first, whole event is kept in `out`.
    let mut out = Vec::new();
    assert!(decode_events(&b[..50], &mut out).is_err());
    assert_eq!(out, [MountEvent::Attach(1)]);
}

#[test]
fn hostile_event_len_is_malformed() {
    let mut b = encode(&[MountEvent::Attach(1)]);
    for bad in [0u32, 1, 23] {
        b[..4].copy_from_slice(&bad.to_ne_bytes());
        assert_eq!(
            malformed(decode(&b)),
            "fanotify event_len below the metadata size"
        );
    }
    for bad in [41u32, u32::MAX] {
        b[..4].copy_from_slice(&bad.to_ne_bytes());
        assert_eq!(
            malformed(decode(&b)),
            "fanotify event_len beyond the buffer"
        );
    }
}

#[test]
fn hostile_metadata_is_malformed() {
    let mut b = encode(&[MountEvent::Attach(1)]);
    b[4] = 2;
    assert_eq!(malformed(decode(&b)), "fanotify metadata version");
    b[4] = FANOTIFY_METADATA_VERSION;
    for bad in [0u16, 23, 41] {
        b[6..8].copy_from_slice(&bad.to_ne_bytes());
        assert_eq!(malformed(decode(&b)), "fanotify metadata_len out of range");
    }
}

#[test]
fn hostile_info_records_are_malformed() {
    // len 0: would loop forever if not refused.
    let mut rec = mnt_record(1);
    rec[2..4].copy_from_slice(&0u16.to_ne_bytes());
    assert_eq!(
        malformed(decode(&event(FAN_MNT_ATTACH, -1, &[rec.clone()]))),
        "fanotify info record length below its header"
    );
    // Overrunning the event.
    rec[2..4].copy_from_slice(&17u16.to_ne_bytes());
    assert_eq!(
        malformed(decode(&event(FAN_MNT_ATTACH, -1, &[rec.clone()]))),
        "fanotify info record overruns its event"
    );
    // A mount record too short for its id.
    let mut short = vec![FAN_EVENT_INFO_TYPE_MNT, 0, 0, 0, 0, 0, 0, 0];
    short[2..4].copy_from_slice(&8u16.to_ne_bytes());
    assert_eq!(
        malformed(decode(&event(FAN_MNT_ATTACH, -1, &[short]))),
        "fanotify mount record too short"
    );
    // A header cut short by the event's end.
    assert_eq!(
        malformed(decode(&event(FAN_MNT_ATTACH, -1, &[vec![7, 0]]))),
        "fanotify info record header truncated"
    );
    // No mount record at all.
    assert_eq!(
        malformed(decode(&event(FAN_MNT_DETACH, -1, &[other_record(1, 8)]))),
        "fanotify mount event without a mount record"
    );
}

fn arb_event() -> impl Strategy<Value = MountEvent> {
    prop_oneof![
        any::<u64>().prop_map(MountEvent::Attach),
        any::<u64>().prop_map(MountEvent::Detach),
        any::<u64>().prop_map(MountEvent::Move),
        Just(MountEvent::Overflow),
    ]
}

proptest! {
    #[test]
    fn round_trips(evs in proptest::collection::vec(arb_event(), 0..50)) {
        prop_assert_eq!(decode(&encode(&evs)).unwrap(), evs);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut out = Vec::new();
        let mut fds = Vec::new();
        let _ = decode_events_with_fds(&b, &mut out, &mut fds);
        // Every event consumes at least 24 bytes.
        prop_assert!(out.len() <= b.len() / METADATA_LEN);
        prop_assert!(fds.len() <= b.len() / METADATA_LEN);
    }

    /// Valid events with one byte flipped: never a panic, and whatever
    /// decodes is at most one event per 24 bytes.
    #[test]
    fn mutated_events_never_panic(
        evs in proptest::collection::vec(arb_event(), 1..10),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut b = encode(&evs);
        let i = at.index(b.len());
        b[i] = byte;
        let mut out = Vec::new();
        let _ = decode_events(&b, &mut out);
        prop_assert!(out.len() <= b.len() / METADATA_LEN);
    }
}
