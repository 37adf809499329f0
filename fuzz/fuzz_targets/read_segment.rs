//! Fuzzes the segment reader and `verify` over hostile segment files.
//!
//! Input: a flags byte, a `u16` skip, then up to three segments, each a
//! `u64` base index, a `u32` length and that many bytes. Unless flag bit 0
//! is set, a valid header for the base is written first and the bytes
//! follow it at offset 4096 (otherwise the bytes are the whole file). The
//! files go into an in-memory filesystem, named after their base.
//!
//! Properties:
//! - `Reader::open_dir_with` and `verify` never panic, and the reader ends;
//! - the reader returns consecutive indexes from the first base, and every
//!   record it returns is a frame that really is in a segment file, after
//!   the previous one when it comes from the same file (it never invents or
//!   reorders records);
//! - when `verify` reports no problem, the reader returned no error and
//!   exactly the records `verify` counted, ending at `verify`'s last index;
//! - a reader started `skip` records later (which seeks through the sparse
//!   index of sealed segments) returns the same records as the first one
//!   where both returned any.
#![no_main]
#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use weir_log::fs::FileSystem;
use weir_log::mem::MemFs;
use weir_log::segment::{HEADER_LEN, SegmentHeader, segment_path};
use weir_log::{LogRecord, Reader, verify};

const DIR: &str = "/log";

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if data.len() < n {
        return None;
    }
    let (a, b) = data.split_at(n);
    *data = b;
    Some(a)
}

fn frame_of(r: &LogRecord) -> Vec<u8> {
    r.to_frame().expect("a record read back encodes")
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Reads to the end or the first error, with a bound that only a reader
/// that never ends can reach.
fn read_all(mut r: Reader, bound: usize) -> (Vec<LogRecord>, Option<weir_log::Error>) {
    let mut out = Vec::new();
    loop {
        match r.next() {
            None => return (out, None),
            Some(Ok(x)) => out.push(x),
            Some(Err(e)) => return (out, Some(e)),
        }
        assert!(out.len() <= bound, "the reader does not end");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let Some(head) = take(&mut data, 3) else {
        return;
    };
    let raw = head[0] & 1 == 1;
    let skip = u64::from(u16::from_le_bytes([head[1], head[2]]));
    let fs = MemFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).unwrap();
    let mut total = 0;
    for _ in 0..3 {
        let Some(b) = take(&mut data, 8) else { break };
        let base = u64::from_le_bytes(b.try_into().unwrap());
        let Some(l) = take(&mut data, 4) else { break };
        let len = (u32::from_le_bytes(l.try_into().unwrap()) as usize).min(data.len());
        let body = take(&mut data, len).unwrap();
        let mut file = Vec::new();
        if !raw {
            let h = SegmentHeader {
                version: 1,
                base_index: base,
                capacity: 64 * 1024,
                created_ns: 1,
            };
            file = h.encode();
            assert_eq!(file.len() as u64, HEADER_LEN);
        }
        file.extend_from_slice(body);
        total += file.len();
        fs.write_file(segment_path(dir, base), &file);
    }
    let files = fs.files();
    let Some(first) = files
        .first()
        .and_then(|p| weir_log::segment::parse_segment_name(p))
    else {
        return;
    };
    let bound = total / 36 + 2;
    let fsa: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let (recs, err) = read_all(Reader::open_dir_with(fsa.clone(), dir, first), bound);

    // Consecutive indexes from the first base, each a frame of a file,
    // after the previous one when it comes from the same file.
    let start = first.max(1);
    let contents: Vec<Vec<u8>> = files.iter().map(|p| fs.read_file(p).unwrap()).collect();
    let mut at: Option<(usize, usize)> = None;
    for (k, r) in recs.iter().enumerate() {
        assert_eq!(r.index, start + k as u64, "index out of sequence");
        let frame = frame_of(r);
        let found = at
            .and_then(|(f, end)| find(&contents[f], &frame, end).map(|p| (f, p)))
            .or_else(|| {
                contents
                    .iter()
                    .enumerate()
                    .find_map(|(f, b)| find(b, &frame, HEADER_LEN as usize).map(|p| (f, p)))
            });
        let (f, pos) = found.expect("a returned record is a frame in a segment file");
        at = Some((f, pos + frame.len()));
    }

    let v = verify(&fs, dir, |_, _| {}).expect("verify over MemFs has no I/O errors");
    if v.problem.is_none() {
        assert!(
            err.is_none(),
            "verify is clean but the reader failed: {err:?}"
        );
        assert_eq!(
            recs.len() as u64,
            v.records,
            "reader and verify disagree on the count"
        );
        if let Some(last) = recs.last() {
            assert_eq!(last.index, v.last_index);
        }
    }

    // A later start (through the sparse index) sees the same records.
    let later = first.saturating_add(skip);
    let (recs2, _) = read_all(Reader::open_dir_with(fsa, dir, later), bound);
    for r in &recs2 {
        if let Some(k) = r.index.checked_sub(start)
            && let Some(same) = recs.get(k as usize)
        {
            assert_eq!(same, r, "a reader from {later} disagrees at {}", r.index);
        }
    }
});
