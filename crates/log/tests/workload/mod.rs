//! The concurrent workload shared by the concurrency and fail point tests.
//!
//! Every record carries its writer, its sequence number within that writer
//! and a body derived from both, so a reader can check each record on its
//! own ([`check_record`]). [`write_all`] returns which index each record
//! got, and [`model`] turns that into what every index must hold.
#![allow(dead_code, unreachable_pub)] // each test binary uses a subset

use std::time::{Duration, Instant};

use weir_log::{Log, LogRecord, Reader, Record, RecordType};

pub const SEGMENT: u64 = 64 * 1024;
/// Readers give up (and fail) after this long without reaching the end, so a
/// bug that stops the log shows as a failure rather than a hung test.
pub const DEADLINE: Duration = Duration::from_secs(120);

pub fn rng_next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The name of record `seq` of `writer`: a 12-byte header then a body whose
/// length and bytes follow from the header alone.
pub fn payload(writer: u32, seq: u32) -> Vec<u8> {
    let mut x = (u64::from(writer) << 32 | u64::from(seq)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let len = (rng_next(&mut x) % 700) as usize;
    let mut v = Vec::with_capacity(12 + len);
    v.extend_from_slice(&writer.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend_from_slice(&(len as u32).to_le_bytes());
    v.extend((0..len).map(|_| rng_next(&mut x) as u8));
    v
}

/// Checks a record on its own and returns its `(writer, seq)`.
pub fn check_record(r: &LogRecord) -> Result<(u32, u32), String> {
    let n = &r.name;
    if n.len() < 12 {
        return Err(format!(
            "index {}: short payload of {} bytes",
            r.index,
            n.len()
        ));
    }
    let w = u32::from_le_bytes(n[0..4].try_into().unwrap());
    let s = u32::from_le_bytes(n[4..8].try_into().unwrap());
    if *n != payload(w, s) {
        return Err(format!(
            "index {}: payload of writer {w} seq {s} is damaged",
            r.index
        ));
    }
    if r.parent != w.to_le_bytes() || r.kind != RecordType(200 + w as u16) {
        return Err(format!(
            "index {}: parent or type does not match writer {w}",
            r.index
        ));
    }
    Ok((w, s))
}

/// Follows a reader until it has seen `n` records, checking continuity.
/// `fresh` makes a new reader from an index (to also exercise reopening).
pub fn follow(
    mut next: impl FnMut(&mut Reader) -> Option<weir_log::Result<LogRecord>>,
    mut reader: Reader,
    fresh: Option<&dyn Fn(u64) -> Reader>,
    n: u64,
) -> Result<Vec<(u32, u32)>, String> {
    let start = Instant::now();
    let mut seen = Vec::with_capacity(n as usize);
    let mut expect = 1u64;
    while expect <= n {
        match next(&mut reader) {
            Some(Ok(r)) => {
                if r.index != expect {
                    return Err(format!("expected index {expect}, got {}", r.index));
                }
                seen.push(check_record(&r)?);
                expect += 1;
            }
            Some(Err(e)) => return Err(format!("reader error at {expect}: {e}")),
            None => {
                if start.elapsed() > DEADLINE {
                    return Err(format!("stuck at index {expect} of {n}"));
                }
                reader.wait(Duration::from_millis(20));
                if let Some(f) = fresh {
                    reader = f(expect);
                }
            }
        }
    }
    match next(&mut reader) {
        None => Ok(seen),
        Some(r) => Err(format!("a record past the end: {r:?}")),
    }
}

/// Writes `per_writer` records from each of `writers` threads and returns,
/// per writer, the index each of its records got.
pub fn write_all(log: &Log, writers: u32, per_writer: u32) -> Vec<Vec<u64>> {
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..writers)
            .map(|w| {
                s.spawn(move || {
                    let mut got = Vec::with_capacity(per_writer as usize);
                    for seq in 0..per_writer {
                        let name = payload(w, seq);
                        let parent = w.to_le_bytes();
                        let r = Record::new(RecordType(200 + w as u16))
                            .parent(&parent)
                            .name(&name);
                        let a = if seq % 1000 == 999 {
                            log.append_durable(&r).unwrap().index()
                        } else {
                            log.append(&r).unwrap().index()
                        };
                        got.push(a);
                    }
                    got
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The model: the `(writer, seq)` of every index, after checking that the
/// indexes handed out are exactly `1..=n` and in each writer's own order.
pub fn model(indexes: &[Vec<u64>]) -> Vec<(u32, u32)> {
    let n: usize = indexes.iter().map(Vec::len).sum();
    let mut at: Vec<Option<(u32, u32)>> = vec![None; n];
    for (w, idx) in indexes.iter().enumerate() {
        assert!(
            idx.windows(2).all(|p| p[0] < p[1]),
            "writer {w} got indexes out of order"
        );
        for (seq, &i) in idx.iter().enumerate() {
            assert!(i >= 1 && i as usize <= n, "index {i} outside 1..={n}");
            let slot = &mut at[i as usize - 1];
            assert!(slot.is_none(), "index {i} handed out twice");
            *slot = Some((w as u32, seq as u32));
        }
    }
    at.into_iter()
        .map(|x| x.expect("every index handed out"))
        .collect()
}
