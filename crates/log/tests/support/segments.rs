//! A small log for retention tests: 64 KiB segments, limits counted in
//! segments, and looks at which segment files are left on disk.

use std::path::Path;
use std::time::Duration;

use weir_log::segment::parse_segment_name;
use weir_log::{Error, FullPolicy, Log, LogRecord, Options, Retention};

pub const SEG: u64 = 64 * 1024;

pub fn retention(max_segments: u64, on_full: FullPolicy) -> Retention {
    Retention {
        max_bytes: max_segments * SEG,
        max_age: None,
        keep_bytes: 0,
        keep_age: Duration::ZERO,
        on_full,
        max_idle_records: None,
        max_idle_time: None,
    }
}

pub fn open(dir: &Path, r: Retention) -> Log {
    Log::open(dir, Options::default().segment_size(SEG).retention(r)).unwrap()
}

/// Segment files on disk as `(base, length)`, oldest first.
pub fn on_disk(dir: &Path) -> Vec<(u64, u64)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let base = parse_segment_name(&e.path())?;
            Some((base, e.metadata().ok()?.len()))
        })
        .collect();
    v.sort();
    v
}

pub fn bases(dir: &Path) -> Vec<u64> {
    on_disk(dir).into_iter().map(|s| s.0).collect()
}

pub fn disk_bytes(dir: &Path) -> u64 {
    on_disk(dir).iter().map(|s| s.1).sum()
}

pub fn assert_truncated(first: Option<weir_log::Result<LogRecord>>, requested: u64, oldest: u64) {
    match first {
        Some(Err(Error::Truncated {
            requested: r,
            oldest: o,
        })) if (r, o) == (requested, oldest) => {}
        other => panic!("expected Truncated {{ {requested}, {oldest} }}, got {other:?}"),
    }
}
