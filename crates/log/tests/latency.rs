//! The commit and durable latency histograms in `Log::stats()`: one
//! observation per record committed by this handle, sums bounded by the
//! wall time the records really waited, and a retried write counted once
//! with the whole wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_log::fault::FaultyFs;
use weir_log::{Histogram, Log, Options, Record, RecordType};

const EIO: i32 = rustix::io::Errno::IO.raw_os_error();

fn mark(log: &Log, i: u64) {
    let name = i.to_string();
    let _ = log
        .append(&Record::new(RecordType::MARK).name(name.as_bytes()))
        .unwrap();
}

/// Cumulative counts rise and end at the count.
fn check_shape(h: &Histogram) {
    let c: Vec<(Option<u64>, u64)> = h.cumulative().collect();
    assert!(c.windows(2).all(|w| w[0].1 <= w[1].1), "{c:?}");
    assert_eq!(c.last(), Some(&(None, h.count())));
}

/// Observations at or below `ns` (a bucket bound).
fn at_or_below(h: &Histogram, ns: u64) -> u64 {
    h.cumulative()
        .find(|(b, _)| *b == Some(ns))
        .map(|(_, n)| n)
        .unwrap()
}

#[test]
fn every_committed_record_is_observed_once_with_a_plausible_wait() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(dir.path(), Options::default()).unwrap());
    let start = Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || (0..500).for_each(|i| mark(&log, t * 1000 + i)))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    log.sync().unwrap();
    let waited = start.elapsed();
    let s = log.stats();
    assert_eq!(s.last_index, 2000);
    assert_eq!(s.commit_latency.count(), 2000, "{:?}", s.commit_latency);
    assert_eq!(s.durable_latency.count(), 2000, "{:?}", s.durable_latency);
    check_shape(&s.commit_latency);
    check_shape(&s.durable_latency);
    // No record waited longer than the whole test; the fsync comes after
    // the write, so every durable wait is at least its commit wait.
    let most = 2000 * waited.as_nanos();
    assert!(s.commit_latency.sum_ns > 0);
    assert!(s.commit_latency.sum_ns <= most, "{:?}", s.commit_latency);
    assert!(s.durable_latency.sum_ns <= most, "{:?}", s.durable_latency);
    assert!(s.durable_latency.sum_ns >= s.commit_latency.sum_ns);
    let over = Histogram::BOUNDS_NS
        .iter()
        .find(|&&b| b >= waited.as_nanos() as u64)
        .copied()
        .unwrap();
    assert_eq!(at_or_below(&s.commit_latency, over), 2000);
    drop(log);

    // A reopened log counts only what it commits itself.
    let log = Log::open(dir.path(), Options::default()).unwrap();
    let s = log.stats();
    assert_eq!((s.last_index, s.commit_latency.count()), (2000, 0));
    (0..3).for_each(|i| mark(&log, i));
    log.sync().unwrap();
    let s = log.stats();
    assert_eq!(s.commit_latency.count(), 3);
    assert_eq!(s.durable_latency.count(), 3);
    log.close().unwrap();
}

#[test]
fn a_retried_write_counts_its_records_once_with_the_whole_wait() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let opts = Options::default()
        .segment_size(64 * 1024)
        .fs(Arc::new(fs.clone()));
    let log = Log::open(dir.path(), opts).unwrap();
    let _ = log
        .append_durable(&Record::new(RecordType::MARK).name(b"before"))
        .unwrap();
    let before = log.stats();
    fs.fail_writes(EIO, 0, None);
    (0..10).for_each(|i| mark(&log, i));
    let appended = Instant::now();
    let t0 = Instant::now();
    while log.stats().write_errors == 0 {
        assert!(t0.elapsed() < Duration::from_secs(10), "no write failed");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    // Every record was appended before `appended` and is written after
    // the heal: each waited at least this long.
    let least = appended.elapsed();
    fs.heal();
    log.sync().unwrap();
    let s = log.stats();
    assert_eq!(s.last_index, 11);
    let new = s.commit_latency.count() - before.commit_latency.count();
    assert_eq!(new, 10, "{:?}", s.commit_latency);
    let below = at_or_below(&s.commit_latency, 30_000_000)
        - at_or_below(&before.commit_latency, 30_000_000);
    assert_eq!(below, 0, "a retried record counted as quick: {s:?}");
    let sum = s.commit_latency.sum_ns - before.commit_latency.sum_ns;
    assert!(sum >= 10 * least.as_nanos(), "{sum} < 10 × {least:?}");
    assert_eq!(
        s.durable_latency.count() - before.durable_latency.count(),
        10
    );
    log.close().unwrap();
}
