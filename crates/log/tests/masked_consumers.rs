//! Consumers with a type mask, and the records their mask excludes.
//!
//! A consumer never reads a record its mask excludes, and it cannot clear
//! past such records without reading a record past them. Retention passes
//! it over them: otherwise they would hold segments for it for ever, count
//! in its lag, and make it look idle while it had read everything it
//! wants. These tests poll (up to 10 s) for the state a retention pass
//! leaves, since passes run every ~500 ms and after each roll.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::{eventually, fill, segment_files};
use weir_log::fs::StdFs;
use weir_log::{Log, Options, Record, RecordType, Retention, TypeMask, read_consumers};

const SEG: u64 = 64 * 1024;

fn open(dir: &Path, r: Retention) -> Log {
    Log::open(dir, Options::default().segment_size(SEG).retention(r)).unwrap()
}

fn mount(log: &Log) -> u64 {
    let i = log
        .append(&Record::new(RecordType::MOUNT_ATTACH).name(b"/mnt"))
        .unwrap()
        .index();
    log.sync().unwrap();
    i
}

/// Appends `n` CREAT records and then a MOUNT_ATTACH, and syncs once:
/// a retention pass between them would find nothing wanted after the
/// consumers and move them without reading. Returns the last CREAT.
fn unwanted_then_mount(log: &Log, n: usize) -> u64 {
    for _ in 0..n {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&[b'r'; 500]))
            .unwrap();
    }
    let m = log
        .append(&Record::new(RecordType::MOUNT_ATTACH).name(b"/mnt"))
        .unwrap()
        .index();
    log.sync().unwrap();
    m - 1
}

/// A log in memory with segments of 64 MiB, and its filesystem, which
/// counts the bytes read.
fn open_counting_reads(dir: &Path) -> (Log, weir_log::mem::MemFs) {
    let fs = weir_log::mem::MemFs::new();
    let opts = Options::default()
        .segment_size(64 << 20)
        .fs(std::sync::Arc::new(fs.clone()));
    (Log::open(dir, opts).unwrap(), fs)
}

fn cleared(log: &Log, name: &str) -> Option<u64> {
    log.consumer_list()
        .into_iter()
        .find(|c| c.name == name)
        .map(|c| c.cleared)
}

#[test]
fn records_a_mask_excludes_do_not_hold_segments_or_count_as_lag() {
    // Regression: a consumer with a mask was held at its cleared index by
    // records it never reads. Its segments were never collected, and its
    // lag grew with every record of other types.
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Retention::default());
    log.register("mounts", TypeMask::parse("MOUNT_ATTACH").unwrap())
        .unwrap();
    // About 3 MiB: more than one pass looks at (1 MiB), after a record
    // the consumer reads. Written before the open, so that retention must
    // read them: of the records placed since, it knows the types.
    let first = mount(&log);
    let last = fill(&log, 6000);
    log.close().unwrap();
    let log = open(dir.path(), Retention::default());
    assert!(segment_files(dir.path()).len() > 40);
    log.clear("mounts", first).unwrap();
    eventually("the consumer is passed over every record", || {
        cleared(&log, "mounts") == Some(last)
    });
    eventually("the segments it held are collected", || {
        segment_files(dir.path()).len() == 1
    });
    let c = &log.consumer_list()[0];
    assert_eq!(c.lag, 0);
    // Passed over only up to the first record it reads.
    let w = mount(&log);
    fill(&log, 10);
    eventually("the consumer waits at its record", || {
        cleared(&log, "mounts") == Some(w - 1)
    });
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(cleared(&log, "mounts"), Some(w - 1), "passed its record");
    let seen: Vec<u64> = log
        .consumer_reader("mounts")
        .unwrap()
        .map(|r| r.unwrap().index)
        .collect();
    assert_eq!(seen, [w]);
    log.clear("mounts", w).unwrap();
    log.close().unwrap();
    // The moves that let segments go were saved before they went.
    let saved = read_consumers(&StdFs, dir.path(), 0, 0).unwrap();
    assert!(saved[0].cleared >= w, "{saved:?}");
}

#[test]
fn a_masked_consumer_is_idle_only_while_a_record_it_reads_waits() {
    // Regression: records its mask excludes counted as waiting for the
    // consumer, so one that had read everything it wants was evicted as
    // idle while other types streamed past.
    let dir = tempfile::tempdir().unwrap();
    let r = Retention {
        max_idle_time: Some(Duration::from_millis(300)),
        ..Retention::default()
    };
    let log = open(dir.path(), r);
    log.register("mounts", TypeMask::parse("MOUNT_ATTACH").unwrap())
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        fill(&log, 1);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(cleared(&log, "mounts").is_some(), "evicted while caught up");
    // A record it reads, left unread, makes it idle in its turn.
    mount(&log);
    eventually("the consumer is evicted once its record waits", || {
        cleared(&log, "mounts").is_none()
    });
    log.close().unwrap();
}

#[test]
fn every_masked_consumer_is_passed_over_though_a_pass_looks_at_64() {
    // A pass looks past unwanted records for at most 64 consumers; the
    // others must still be reached in the passes after.
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), Retention::default());
    let mask = TypeMask::parse("MOUNT_ATTACH").unwrap();
    for i in 0..100 {
        log.register(&format!("c{i}"), mask.clone()).unwrap();
    }
    // A record they read after those: retention must read up to it for
    // each consumer.
    let last = unwanted_then_mount(&log, 50);
    eventually("every consumer is passed over every record", || {
        log.consumer_list().iter().all(|c| c.cleared == last)
    });
    log.close().unwrap();
}

#[test]
fn a_pass_over_unwanted_records_seeks_in_the_unsealed_segment() {
    // Regression: the look past unwanted records started at the first
    // frame of the unsealed segment, which has no footer to seek with,
    // and counted only the frames after the consumer's cleared index
    // against its 1 MiB budget. Every pass read the whole segment up to
    // the consumer: 20 MiB here, twice a second.
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_counting_reads(dir.path());
    let before = fill(&log, 40_000);
    assert!(log.stats().segments == 1);
    log.register("mounts", TypeMask::parse("MOUNT_ATTACH").unwrap())
        .unwrap();
    let read = fs.bytes_read();
    // A record it reads after them: it has not read all it wants, so
    // retention reads the records up to that one.
    let last = unwanted_then_mount(&log, 100);
    eventually("the consumer is passed over the new records", || {
        cleared(&log, "mounts") == Some(last)
    });
    let read = fs.bytes_read() - read;
    assert!(
        read < 4 << 20,
        "passing {} records read {read} bytes",
        last - before
    );
    log.close().unwrap();
}

#[test]
fn a_consumer_that_read_all_it_wants_keeps_up_without_reading_the_rest() {
    // Regression: retention found that a masked consumer had nothing left
    // to read only by reading the records after it, at most 1 MiB per pass
    // (twice a second and after each roll). On a log taking more than
    // about 2 MiB/s of records it does not want, its cleared index trailed
    // the end further and further, holding segments and counting as lag.
    let dir = tempfile::tempdir().unwrap();
    let (log, fs) = open_counting_reads(dir.path());
    log.register("mounts", TypeMask::parse("MOUNT_ATTACH").unwrap())
        .unwrap();
    let m = mount(&log);
    log.clear("mounts", m).unwrap();
    let read = fs.bytes_read();
    // About 20 MiB, none of it for "mounts".
    let last = fill(&log, 40_000);
    eventually("the consumer is moved to the end", || {
        cleared(&log, "mounts") == Some(last)
    });
    let read = fs.bytes_read() - read;
    assert!(read < 1 << 20, "moving past 20 MiB read {read} bytes");
    // One record it wants stops it there again.
    let m = mount(&log);
    fill(&log, 10);
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(cleared(&log, "mounts"), Some(m - 1));
    log.close().unwrap();
}

#[test]
fn a_failed_look_past_unwanted_records_does_not_judge_the_consumer_by_them() {
    // Regression: when retention's look past the records a consumer's mask
    // excludes failed once (a read error), the idle check read the time of
    // the record after its cleared index, unwanted as it was, and kept it.
    // Passes after that took the consumer as known to wait there, so it was
    // never moved past those records, and it was evicted as idle by their
    // age while the one record it wanted was fresh.
    use weir_log::fault::FaultyFs;
    let dir = tempfile::tempdir().unwrap();
    let idle = Duration::from_secs(3);
    let retention = Retention {
        max_idle_time: Some(idle),
        ..Retention::default()
    };
    let log = open(dir.path(), retention.clone());
    log.register("mounts", TypeMask::parse("MOUNT_ATTACH").unwrap())
        .unwrap();
    // Holds the segments for now.
    log.register("all", TypeMask::all()).unwrap();
    // Two segments of records it does not want, so that the one it starts
    // in is sealed and read at open only for its size.
    let last_unwanted = fill(&log, 200);
    log.close().unwrap();
    assert!(segment_files(dir.path()).len() >= 2);
    // The close passed it over them; a crash before that save would not
    // have. Put it back where the crash would leave it.
    let state = dir.path().join("consumers.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    for c in v["consumers"].as_array_mut().unwrap() {
        assert_eq!(
            c["cleared"],
            if c["name"] == "all" { 0 } else { last_unwanted }
        );
        c["cleared"] = 0.into();
    }
    std::fs::write(&state, serde_json::to_vec(&v).unwrap()).unwrap();
    // Those records and its last clear grow older than the idle limit.
    std::thread::sleep(idle + Duration::from_millis(500));

    let fs = FaultyFs::new();
    let opts = Options::default()
        .segment_size(SEG)
        .retention(retention)
        .fs(std::sync::Arc::new(fs.clone()));
    let log = Log::open(dir.path(), opts).unwrap();
    log.clear("all", last_unwanted).unwrap();
    // Armed before the first retention pass, ~500 ms after the open.
    let first = segment_files(dir.path())[0].clone();
    let first = first.file_name().unwrap().to_str().unwrap();
    fs.fail_opens_named(first, support::EIO, 0, Some(1));
    // The record it wants, fresh.
    let wanted = mount(&log);
    assert_eq!(wanted, last_unwanted + 1);
    eventually("the consumer passed over what its mask excludes", || {
        cleared(&log, "mounts") != Some(0)
    });
    assert_eq!(fs.opens_failed(), 1, "the look past them never failed");
    assert_eq!(
        cleared(&log, "mounts"),
        Some(last_unwanted),
        "evicted by the age of records it never reads"
    );
    assert_eq!(log.stats().evictions, 0);
}
