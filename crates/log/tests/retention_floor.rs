//! The retention floor: the newest history, younger than its age, that
//! consumers' clears do not cut into, so people can read recent history
//! whatever the consumers did; the size limit still wins over it.

mod support;

use std::path::Path;
use std::time::Duration;

use support::fill;
use support::segments::{SEG, assert_truncated, bases, disk_bytes, on_disk, open, retention};
use weir_log::{FullPolicy, Reader, Retention, TypeMask};

/// `retention(max_segments, EvictMostIdle)` with a floor of 64 segments
/// and `keep_age`.
fn with_floor(max_segments: u64, keep_age: Duration) -> Retention {
    Retention {
        keep_bytes: 64 * SEG,
        keep_age,
        ..retention(max_segments, FullPolicy::EvictMostIdle)
    }
}

const HOUR: Duration = Duration::from_secs(3600);

/// A log in a new directory with about five segments of CREAT records
/// and one consumer, "indexer", whose mask wants none of them, as in a
/// user's report: registered for mount events on a log of device events,
/// it is moved past every record, which clears them all. Closed: a close
/// runs a retention pass before it returns, so what the pass removes is
/// gone, without waiting on the committer's timing. The last index.
fn cleared_by_a_masked_consumer(r: Retention) -> (tempfile::TempDir, u64) {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), r);
    log.register(
        "indexer",
        TypeMask::parse("MOUNT_ATTACH,MOUNT_DETACH").unwrap(),
    )
    .unwrap();
    let last = fill(&log, 600);
    log.close().unwrap();
    (dir, last)
}

/// Every index from `from` on, read from the files.
fn indexes_from(dir: &Path, from: u64) -> Vec<u64> {
    Reader::open_dir(dir, from)
        .map(|r| r.unwrap().index)
        .collect()
}

#[test]
fn the_floor_keeps_history_a_masked_consumer_cleared() {
    // Without a floor, as Lustre purges a cleared changelog: every sealed
    // segment goes, and history from index 1 is gone.
    let (dir, last) = cleared_by_a_masked_consumer(retention(1000, FullPolicy::EvictMostIdle));
    let left = bases(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_truncated(Reader::open_dir(dir.path(), 1).next(), 1, left[0]);
    let log = open(dir.path(), retention(1000, FullPolicy::EvictMostIdle));
    let indexer = &log.consumer_list()[0];
    assert_eq!((indexer.name.as_str(), indexer.cleared), ("indexer", last));
    drop(log);

    // With one, the same consumer clears the same records, and history
    // stays readable from index 1.
    let (dir, last) = cleared_by_a_masked_consumer(with_floor(1000, HOUR));
    assert!(bases(dir.path()).len() >= 5, "{:?}", bases(dir.path()));
    assert_eq!(indexes_from(dir.path(), 1), (1..=last).collect::<Vec<_>>());
    let log = open(dir.path(), with_floor(1000, HOUR));
    assert_eq!(log.consumer_list()[0].cleared, last);
    assert_eq!(log.first_index(), 1);
    assert_eq!(log.retention(), &with_floor(1000, HOUR));
    log.close().unwrap();
    assert_eq!(indexes_from(dir.path(), 1), (1..=last).collect::<Vec<_>>());
}

#[test]
fn over_the_size_limit_history_inside_the_floor_goes() {
    let (dir, last) = cleared_by_a_masked_consumer(with_floor(1000, HOUR));
    let before = bases(dir.path());
    assert_eq!(before[0], 1);
    // Reopened with a limit of 4 segments, under what the floor holds:
    // the oldest go until the log fits, the newest records stay.
    let log = open(dir.path(), with_floor(4, HOUR));
    log.close().unwrap();
    let after = bases(dir.path());
    assert!(
        disk_bytes(dir.path()) <= 4 * SEG,
        "{:?}",
        on_disk(dir.path())
    );
    assert!(
        after[0] > 1 && after[0] <= last,
        "{before:?} then {after:?}"
    );
    assert_truncated(Reader::open_dir(dir.path(), 1).next(), 1, after[0]);
    assert_eq!(
        indexes_from(dir.path(), after[0]),
        (after[0]..=last).collect::<Vec<_>>()
    );
}

#[test]
fn the_floors_age_is_read_from_the_footers_of_segments_found_at_open() {
    let (dir, last) = cleared_by_a_masked_consumer(with_floor(1000, HOUR));
    let before = bases(dir.path());
    // Reopened, the segments carry no time until retention reads their
    // footers: an hour's floor finds them young and keeps them.
    let log = open(dir.path(), with_floor(1000, HOUR));
    log.close().unwrap();
    assert_eq!(indexes_from(dir.path(), 1), (1..=last).collect::<Vec<_>>());
    // A floor of a nanosecond finds them all older: every segment but
    // the newest goes, as without a floor.
    let log = open(dir.path(), with_floor(1000, Duration::from_nanos(1)));
    log.close().unwrap();
    let after = bases(dir.path());
    assert_eq!(after.len(), 1, "{before:?} then {after:?}");
    assert!(after[0] > *before.iter().rev().nth(1).unwrap());
    assert_truncated(Reader::open_dir(dir.path(), 1).next(), 1, after[0]);
}
