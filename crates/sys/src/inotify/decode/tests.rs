//! Tests of the inotify event decoder, with a test-only encoder that lays
//! events out the way the kernel does.

use proptest::prelude::*;

use super::*;
use crate::inotify::{IN_CLOSE_WRITE, IN_CREATE, IN_IGNORED, IN_ISDIR, IN_Q_OVERFLOW};

/// One event's header.
fn header(wd: i32, mask: u32, cookie: u32, len: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_LEN);
    b.extend_from_slice(&wd.to_ne_bytes());
    b.extend_from_slice(&mask.to_ne_bytes());
    b.extend_from_slice(&cookie.to_ne_bytes());
    b.extend_from_slice(&len.to_ne_bytes());
    b
}

/// One event as the kernel writes it: `len` 0 without a name, else the
/// name, its NUL and NULs up to a multiple of 16.
fn encode_one(e: &Event) -> Vec<u8> {
    let padded = if e.name.is_empty() {
        0
    } else {
        (e.name.len() + 1).next_multiple_of(HEADER_LEN)
    };
    let mut b = header(e.wd.0, e.mask, e.cookie, padded as u32);
    b.extend_from_slice(&e.name);
    b.resize(HEADER_LEN + padded, 0);
    b
}

fn encode(events: &[Event]) -> Vec<u8> {
    events.iter().flat_map(encode_one).collect()
}

fn ev(wd: i32, mask: u32, cookie: u32, name: &[u8]) -> Event {
    Event {
        wd: Wd(wd),
        mask,
        cookie,
        name: name.to_vec(),
    }
}

fn decode(b: &[u8]) -> Result<Vec<Event>, DecodeError> {
    let mut out = Vec::new();
    decode_events(b, &mut out).map(|()| out)
}

#[test]
fn decodes_file_and_directory_events() {
    let evs = [
        ev(1, IN_CLOSE_WRITE, 0, b""),
        ev(2, IN_CREATE | IN_ISDIR, 0, b"sub"),
        ev(2, IN_CREATE, 0, &[b'x'; 15]),
        ev(2, IN_CREATE, 0, &[b'y'; 16]),
        ev(1, IN_IGNORED, 0, b""),
        ev(-1, IN_Q_OVERFLOW, 0, b""),
    ];
    let b = encode(&evs);
    // Names padded to 16, 16 and 32 bytes.
    assert_eq!(b.len(), 6 * 16 + 16 + 16 + 32);
    assert_eq!(decode(&b).unwrap(), evs);
}

#[test]
fn empty_buffer_is_no_events() {
    assert_eq!(decode(&[]).unwrap(), []);
}

#[test]
fn appends_to_out() {
    let mut out = vec![ev(9, IN_IGNORED, 0, b"")];
    decode_events(&encode(&[ev(1, IN_CLOSE_WRITE, 0, b"")]), &mut out).unwrap();
    assert_eq!(
        out,
        [ev(9, IN_IGNORED, 0, b""), ev(1, IN_CLOSE_WRITE, 0, b"")]
    );
}

#[test]
fn name_stops_at_the_first_nul() {
    // Padding longer than the kernel's, and not all NUL after the first:
    // the name is what comes before the NUL.
    let mut b = header(3, IN_CREATE, 7, 48);
    b.extend_from_slice(b"loop0\0junk");
    b.resize(HEADER_LEN + 48, 0xAA);
    assert_eq!(decode(&b).unwrap(), [ev(3, IN_CREATE, 7, b"loop0")]);
    // A `len` of only NULs is an empty name.
    let mut b = header(3, IN_CREATE, 0, 16);
    b.resize(32, 0);
    assert_eq!(decode(&b).unwrap(), [ev(3, IN_CREATE, 0, b"")]);
}

#[test]
fn truncated_header_is_an_error() {
    let b = encode(&[ev(1, IN_CLOSE_WRITE, 0, b""), ev(1, IN_CLOSE_WRITE, 0, b"")]);
    for cut in [1, 8, 15] {
        let mut out = Vec::new();
        assert_eq!(
            decode_events(&b[..16 + cut], &mut out),
            Err(DecodeError::Truncated { at: 16 }),
            "cut {cut}"
        );
        // The first, whole event is kept.
        assert_eq!(out, [ev(1, IN_CLOSE_WRITE, 0, b"")]);
    }
}

#[test]
fn len_past_the_buffer_is_an_error() {
    let b = encode(&[ev(4, IN_CREATE, 0, b"dm-0")]);
    assert_eq!(b.len(), 32);
    for cut in [17, 20, 31] {
        assert_eq!(
            decode(&b[..cut]),
            Err(DecodeError::NameOverrun { at: 0, len: 16 }),
            "cut {cut}"
        );
    }
    // Only a header, with a `len` the buffer does not have.
    assert_eq!(
        decode(&b[..16]),
        Err(DecodeError::NameOverrun { at: 0, len: 16 })
    );
    let mut h = header(4, IN_CREATE, 0, 64);
    h.extend_from_slice(&[0; 48]);
    assert_eq!(decode(&h), Err(DecodeError::NameOverrun { at: 0, len: 64 }));
}

#[test]
fn hostile_len_is_an_error() {
    for len in [NAME_LEN_MAX as u32 + 1, u32::MAX] {
        let mut b = header(1, IN_CREATE, 0, len);
        b.extend_from_slice(&[0; 64]);
        assert_eq!(decode(&b), Err(DecodeError::NameTooLong { at: 0, len }));
    }
    // The longest accepted name fits exactly.
    let mut b = header(1, IN_CREATE, 0, NAME_LEN_MAX as u32);
    b.extend(std::iter::repeat_n(b'n', NAME_LEN_MAX - 1));
    b.push(0);
    let got = decode(&b).unwrap();
    assert_eq!(got[0].name.len(), NAME_LEN_MAX - 1);
}

#[test]
fn name_without_nul_is_an_error() {
    let mut b = encode(&[ev(1, IN_CLOSE_WRITE, 0, b"")]);
    b.extend(header(2, IN_CREATE, 0, 16));
    b.extend_from_slice(&[b'z'; 16]);
    let mut out = Vec::new();
    assert_eq!(
        decode_events(&b, &mut out),
        Err(DecodeError::NameUnterminated { at: 16 })
    );
    assert_eq!(out, [ev(1, IN_CLOSE_WRITE, 0, b"")]);
}

#[test]
fn errors_say_where() {
    assert_eq!(
        DecodeError::NameOverrun { at: 32, len: 16 }.to_string(),
        "inotify event at byte 32: name of 16 bytes past the end of the buffer"
    );
}

fn arb_name() -> impl Strategy<Value = Vec<u8>> {
    // Names never hold a NUL; up to NAME_MAX (255) bytes.
    proptest::collection::vec(1u8..=255, 0..=255)
}

fn arb_event() -> impl Strategy<Value = Event> {
    (any::<i32>(), any::<u32>(), any::<u32>(), arb_name()).prop_map(|(wd, mask, cookie, name)| {
        Event {
            wd: Wd(wd),
            mask,
            cookie,
            name,
        }
    })
}

proptest! {
    #[test]
    fn round_trips(evs in proptest::collection::vec(arb_event(), 0..30)) {
        prop_assert_eq!(decode(&encode(&evs)).unwrap(), evs);
    }

    #[test]
    fn two_good_buffers_concatenated_decode_to_both(
        a in proptest::collection::vec(arb_event(), 0..10),
        b in proptest::collection::vec(arb_event(), 0..10),
    ) {
        let both = [encode(&a), encode(&b)].concat();
        prop_assert_eq!(decode(&both).unwrap(), [a, b].concat());
    }

    /// A cut inside an event is an error that names that event, and the
    /// events before it are kept; a cut between events decodes the prefix.
    #[test]
    fn cuts_are_errors_or_prefixes(
        evs in proptest::collection::vec(arb_event(), 1..10),
        at in any::<prop::sample::Index>(),
    ) {
        let b = encode(&evs);
        let cut = at.index(b.len());
        let mut starts = vec![0];
        for e in &evs {
            starts.push(starts.last().unwrap() + encode_one(e).len());
        }
        let whole = starts.iter().filter(|&&s| s <= cut).count() - 1;
        let mut out = Vec::new();
        let res = decode_events(&b[..cut], &mut out);
        prop_assert_eq!(&out[..], &evs[..whole]);
        if starts.contains(&cut) {
            prop_assert_eq!(res, Ok(()));
        } else {
            let at = starts[whole];
            prop_assert!(
                matches!(
                    res,
                    Err(DecodeError::Truncated { at: a } | DecodeError::NameOverrun { at: a, .. })
                        if a == at
                ),
                "{:?}", res
            );
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..1024)) {
        let mut out = Vec::new();
        let res = decode_events(&b, &mut out);
        // Every event consumes at least a header.
        prop_assert!(out.len() <= b.len() / HEADER_LEN);
        prop_assert!(out.iter().all(|e| !e.name.contains(&0) && e.name.len() < NAME_LEN_MAX));
        if res.is_ok() {
            // What decodes, re-encoded the kernel's way, decodes the same.
            prop_assert_eq!(decode(&encode(&out)).unwrap(), out);
        }
    }

    /// Valid events with one byte overwritten: never a panic, and at most
    /// one event per 16 bytes.
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
        prop_assert!(out.len() <= b.len() / HEADER_LEN);
    }
}
