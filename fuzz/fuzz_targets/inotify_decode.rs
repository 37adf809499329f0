//! Fuzzes the inotify event decoder, `weir_sys::inotify::decode_events`.
//!
//! Property: decoding never panics nor loops; it yields at most one event
//! per 16 bytes, names without a NUL and shorter than `PATH_MAX`; on an
//! error the bytes before the failed event decode to exactly the events
//! kept, and the bytes from it fail the same way; a buffer that decodes,
//! repeated, decodes to its events repeated, and its events re-encoded the
//! kernel's way decode to themselves. When the first input byte is odd the
//! target builds well-formed events from the input (its own encoder of the
//! kernel layout), checks they decode back exactly, then overwrites one
//! input-chosen byte to drive the length checks with near-valid buffers.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_sys::inotify::{DecodeError, Event, Wd, decode_events};

/// `sizeof(struct inotify_event)`.
const HEADER_LEN: usize = 16;
/// The decoder's limit on `len`: `PATH_MAX`.
const NAME_LEN_MAX: usize = 4096;

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
    decode_events(&buf, &mut out).expect("well-formed events decode");
    assert_eq!(out, want);
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
    let res = decode_events(buf, &mut out);
    assert!(out.len() <= buf.len() / HEADER_LEN);
    assert!(
        out.iter()
            .all(|e| !e.name.contains(&0) && e.name.len() < NAME_LEN_MAX)
    );
    match res {
        Ok(()) => {
            let twice = [buf, buf].concat();
            let mut again = Vec::new();
            decode_events(&twice, &mut again).expect("a repeated good buffer decodes");
            assert_eq!(again, [&out[..], &out[..]].concat());
            let mut back = Vec::new();
            decode_events(&kernel_layout(&out), &mut back).expect("re-encoded events decode");
            assert_eq!(back, out);
        }
        Err(e) => {
            let at = offset(&e);
            assert!(at < buf.len());
            let mut before = Vec::new();
            decode_events(&buf[..at], &mut before).expect("the events before an error decode");
            assert_eq!(before, out);
            let mut rest = Vec::new();
            let again =
                decode_events(&buf[at..], &mut rest).expect_err("the bad event fails again");
            assert!(rest.is_empty());
            assert_eq!(offset(&again), 0);
            assert_eq!(std::mem::discriminant(&again), std::mem::discriminant(&e));
        }
    }
}

/// The offset of the event an error is about.
fn offset(e: &DecodeError) -> usize {
    match *e {
        DecodeError::Truncated { at }
        | DecodeError::NameTooLong { at, .. }
        | DecodeError::NameOverrun { at, .. }
        | DecodeError::NameUnterminated { at } => at,
        _ => panic!("a DecodeError this target does not know: {e:?}"),
    }
}

/// Events laid out as the kernel writes them: `len` 0 without a name, else
/// the name, its NUL and NULs up to a multiple of 16.
fn kernel_layout(events: &[Event]) -> Vec<u8> {
    let mut buf = Vec::new();
    for e in events {
        put(&mut buf, e, 0);
    }
    buf
}

/// Appends one event with `extra` more NULs of padding than the kernel's.
fn put(buf: &mut Vec<u8>, e: &Event, extra: usize) {
    let mut len = if e.name.is_empty() {
        0
    } else {
        (e.name.len() + 1).next_multiple_of(HEADER_LEN)
    };
    len += extra;
    buf.extend_from_slice(&e.wd.0.to_ne_bytes());
    buf.extend_from_slice(&e.mask.to_ne_bytes());
    buf.extend_from_slice(&e.cookie.to_ne_bytes());
    buf.extend_from_slice(&u32::try_from(len).unwrap().to_ne_bytes());
    let end = buf.len() + len;
    buf.extend_from_slice(&e.name);
    buf.resize(end, 0);
}

/// Well-formed events from the input, each taking a control byte (bit 0:
/// 16 more bytes of padding than the kernel gives), a name length, `wd`,
/// `mask` and `cookie` (4 bytes each), then the name, whose NULs become
/// `@`. Input that runs out reads as zeros.
fn encode(body: &[u8]) -> (Vec<u8>, Vec<Event>) {
    let mut buf = Vec::new();
    let mut want = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let [ctrl] = take(&mut rest);
        let [n] = take(&mut rest);
        let wd = i32::from_le_bytes(take(&mut rest));
        let mask = u32::from_le_bytes(take(&mut rest));
        let cookie = u32::from_le_bytes(take(&mut rest));
        let name: Vec<u8> = take_vec(&mut rest, usize::from(n))
            .into_iter()
            .map(|b| if b == 0 { b'@' } else { b })
            .collect();
        let e = Event {
            wd: Wd(wd),
            mask,
            cookie,
            name,
        };
        let extra = if ctrl & 1 != 0 { HEADER_LEN } else { 0 };
        put(&mut buf, &e, extra);
        want.push(e);
    }
    (buf, want)
}

/// The next `N` bytes of `rest`, zeros past its end.
fn take<const N: usize>(rest: &mut &[u8]) -> [u8; N] {
    let mut a = [0; N];
    let v = take_vec(rest, N);
    a.copy_from_slice(&v);
    a
}

/// The next `n` bytes of `rest`, zeros past its end.
fn take_vec(rest: &mut &[u8], n: usize) -> Vec<u8> {
    let (head, tail) = rest.split_at(n.min(rest.len()));
    *rest = tail;
    let mut v = head.to_vec();
    v.resize(n, 0);
    v
}
