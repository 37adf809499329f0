//! Fuzzes the fanotify file-id event decoder,
//! `weir_sys::fanotify::fid::decode_fid_events`.
//!
//! Property: decoding never panics nor loops; it yields at most one event
//! per 24 bytes, and every handle and name it yields lies inside the input
//! (a handle at most `MAX_HANDLE_SZ` bytes, a name without a NUL); a
//! buffer that decodes, repeated, decodes to its events repeated (events
//! are self-delimiting); on an error, the events delivered are those of
//! the bytes before the bad event. When the first input byte is odd the
//! target builds well-formed events from the input (its own encoder of the
//! kernel layout), checks they decode back exactly, then overwrites one
//! input-chosen byte to drive the length checks with near-valid buffers.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_sys::fanotify::fid::{
    DecodeError, FAN_EVENT_INFO_TYPE_DFID, FAN_EVENT_INFO_TYPE_DFID_NAME, FAN_EVENT_INFO_TYPE_FID,
    FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, FAN_EVENT_INFO_TYPE_OLD_DFID_NAME,
    FANOTIFY_METADATA_VERSION, FidEvent, MAX_HANDLE_SZ, decode_fid_events,
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
    let got = decode(&buf).expect("well-formed events decode");
    assert_eq!(got, want);
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

/// An event reduced to what the tests compare: mask, pid, and each record
/// as (type, fsid, handle type, handle, name).
type Rec = (u8, [u32; 2], i32, Vec<u8>, Option<Vec<u8>>);

fn summary(e: &FidEvent<'_>) -> (u64, i32, Vec<Rec>) {
    let mut recs = Vec::new();
    let named = [
        (FAN_EVENT_INFO_TYPE_DFID_NAME, e.dir_name),
        (FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, e.old),
        (FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, e.new),
    ];
    for (t, d) in named {
        if let Some(d) = d {
            let f = d.dir;
            recs.push((
                t,
                f.fsid,
                f.handle_type,
                f.handle.to_vec(),
                Some(d.name.to_vec()),
            ));
        }
    }
    for (t, f) in [
        (FAN_EVENT_INFO_TYPE_DFID, e.dir),
        (FAN_EVENT_INFO_TYPE_FID, e.target),
    ] {
        if let Some(f) = f {
            recs.push((t, f.fsid, f.handle_type, f.handle.to_vec(), None));
        }
    }
    recs.sort();
    (e.mask, e.pid, recs)
}

fn decode(buf: &[u8]) -> Result<Vec<(u64, i32, Vec<Rec>)>, DecodeError> {
    let mut out = Vec::new();
    let n = decode_fid_events(buf, |e| out.push(summary(&e)))?;
    assert_eq!(n, out.len());
    Ok(out)
}

/// The invariants of any decode.
fn check(buf: &[u8]) {
    let range = buf.as_ptr_range();
    let inside = |s: &[u8]| {
        let r = s.as_ptr_range();
        s.is_empty() || (range.start <= r.start && r.end <= range.end)
    };
    let mut out = Vec::new();
    let res = decode_fid_events(buf, |e| {
        for d in [e.dir_name, e.old, e.new].into_iter().flatten() {
            assert!(inside(d.name) && !d.name.contains(&0));
            assert!(inside(d.dir.handle) && d.dir.handle.len() <= MAX_HANDLE_SZ);
        }
        for f in [e.dir, e.target].into_iter().flatten() {
            assert!(inside(f.handle) && f.handle.len() <= MAX_HANDLE_SZ);
        }
        out.push(summary(&e));
    });
    assert!(out.len() <= buf.len() / 24);
    match res {
        Ok(n) => {
            assert_eq!(n, out.len());
            let twice = [buf, buf].concat();
            let again = decode(&twice).expect("a repeated good buffer decodes");
            assert_eq!(again, [&out[..], &out[..]].concat());
        }
        Err(e) => {
            // The bytes before the bad event decode alone, to what was seen.
            let at = error_at(&e);
            assert!(at < buf.len());
            let prefix = decode(&buf[..at]).expect("the bytes before the bad event decode");
            assert_eq!(prefix, out);
        }
    }
}

fn error_at(e: &DecodeError) -> usize {
    match *e {
        DecodeError::Truncated { at }
        | DecodeError::EventTooShort { at, .. }
        | DecodeError::EventOverrun { at, .. }
        | DecodeError::Version { at, .. }
        | DecodeError::MetadataLen { at, .. }
        | DecodeError::RecordTruncated { at }
        | DecodeError::RecordLen { at, .. }
        | DecodeError::FidTooShort { at, .. }
        | DecodeError::HandleLen { at, .. }
        | DecodeError::NameUnterminated { at } => at,
        _ => unreachable!("a new DecodeError variant: teach the fuzz target its offset"),
    }
}

/// One encoded event as the decoder must give it back: mask, pid, records.
type Wanted = (u64, i32, Vec<Rec>);

/// Well-formed events from the input, one per chunk: a control byte says
/// which records the event has (bit per type) and how long the handles
/// (0..=MAX_HANDLE_SZ) and names (1..=255) are, taken from the bytes that
/// follow; an unknown record type may be mixed in.
fn encode(body: &[u8]) -> (Vec<u8>, Vec<Wanted>) {
    let mut buf = Vec::new();
    let mut want = Vec::new();
    let mut it = body.iter().copied();
    let mut next = move || it.next();
    while let Some(ctl) = next() {
        let mask = u64::from(next().unwrap_or(0)) << 8 | u64::from(ctl);
        let pid = i32::from(next().unwrap_or(0));
        let mut records = Vec::new();
        let mut recs = Vec::new();
        let types = [
            FAN_EVENT_INFO_TYPE_DFID_NAME,
            FAN_EVENT_INFO_TYPE_DFID,
            FAN_EVENT_INFO_TYPE_OLD_DFID_NAME,
            FAN_EVENT_INFO_TYPE_NEW_DFID_NAME,
            FAN_EVENT_INFO_TYPE_FID,
        ];
        for (i, t) in types.into_iter().enumerate() {
            if ctl & (1 << i) == 0 {
                continue;
            }
            let hlen = usize::from(next().unwrap_or(0)) % (MAX_HANDLE_SZ + 1);
            let handle: Vec<u8> = (0..hlen).map(|_| next().unwrap_or(0xAB)).collect();
            let fsid = [u32::from(ctl), u32::from(hlen as u8)];
            let handle_type = i32::from(t) - 2;
            let named = matches!(
                t,
                FAN_EVENT_INFO_TYPE_DFID_NAME
                    | FAN_EVENT_INFO_TYPE_OLD_DFID_NAME
                    | FAN_EVENT_INFO_TYPE_NEW_DFID_NAME
            );
            let name = named.then(|| {
                let n = 1 + usize::from(next().unwrap_or(0)) % 255;
                (0..n)
                    .map(|_| match next().unwrap_or(b'n') {
                        0 | b'/' => b'x',
                        b => b,
                    })
                    .collect::<Vec<u8>>()
            });
            let mut r = vec![t, 0, 0, 0];
            r.extend_from_slice(&fsid[0].to_ne_bytes());
            r.extend_from_slice(&fsid[1].to_ne_bytes());
            r.extend_from_slice(&(hlen as u32).to_ne_bytes());
            r.extend_from_slice(&handle_type.to_ne_bytes());
            r.extend_from_slice(&handle);
            if let Some(name) = &name {
                r.extend_from_slice(name);
                r.push(0);
            }
            while r.len() % 4 != 0 {
                r.push(0);
            }
            let n = u16::try_from(r.len()).unwrap();
            r[2..4].copy_from_slice(&n.to_ne_bytes());
            records.extend_from_slice(&r);
            recs.push((t, fsid, handle_type, handle, name));
            if ctl & 0x80 != 0 {
                // A record of a type the decoder does not know: skipped.
                records.extend_from_slice(&[99, 0, 8, 0, 1, 2, 3, 4]);
            }
        }
        recs.sort();
        let event_len = u32::try_from(24 + records.len()).unwrap();
        buf.extend_from_slice(&event_len.to_ne_bytes());
        buf.push(FANOTIFY_METADATA_VERSION);
        buf.push(0);
        buf.extend_from_slice(&24u16.to_ne_bytes());
        buf.extend_from_slice(&mask.to_ne_bytes());
        buf.extend_from_slice(&(-1i32).to_ne_bytes());
        buf.extend_from_slice(&pid.to_ne_bytes());
        buf.extend_from_slice(&records);
        want.push((mask, pid, recs));
    }
    (buf, want)
}
