//! Tests of what ends the committer's batch window early, and what does
//! not.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::mem::MemFs;
use crate::{Appended, Log, Options, Record, RecordType, TypeMask};

/// A log in memory whose committer writes only when asked, or after a
/// minute.
fn lazy_log(dir: &std::path::Path) -> Log {
    let opts = Options::default()
        .flush_interval(Duration::from_secs(60))
        .sync_interval(None)
        .fs(Arc::new(MemFs::new()));
    Log::open(dir, opts).unwrap()
}

fn append(log: &Log, name: &[u8]) -> Appended {
    log.append(&Record::new(RecordType::CREAT).name(name))
        .unwrap()
}

/// Regression: a kick while the committer is awake leaves an unpark token,
/// and the committer's next park returned at once and wrote a batch
/// before its window ended. In `tests/enospc_mid_commit.rs` the durable
/// wait of the record before the batch left such a token in about a third
/// of the runs, and the batch went out early, in two commits.
#[test]
fn a_stale_unpark_token_does_not_end_the_batch_window() {
    let dir = tempfile::tempdir().unwrap();
    let log = lazy_log(dir.path());
    let first = log.wait_durable(append(&log, b"first")).unwrap().index();
    // The committer is now in a minute-long window: appending does not
    // wake it.
    for k in 0..4 {
        let _ = append(&log, format!("held {k}").as_bytes());
    }
    let committer = log.inner.signals.committer().unwrap().clone();
    for _ in 0..3 {
        // An unpark with no kick behind it: what a served kick leaves.
        committer.unpark();
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(log.last_index(), first, "the window ended early");
    // A kick that asks for something still ends it.
    let start = Instant::now();
    log.sync().unwrap();
    assert_eq!(log.last_index(), first + 4);
    assert!(start.elapsed() < Duration::from_secs(30));
    log.close().unwrap();
}

/// A consumer may clear the index `append` just returned: the clear asks
/// the committer to write it now rather than at the end of its window.
#[test]
fn a_clear_of_an_unwritten_index_ends_the_batch_window() {
    let dir = tempfile::tempdir().unwrap();
    let log = lazy_log(dir.path());
    log.register("c", TypeMask::all()).unwrap();
    // After a durable wait the committer is in its minute-long window.
    log.wait_durable(append(&log, b"first")).unwrap();
    let last = append(&log, b"second").index();
    let start = Instant::now();
    let info = log.clear("c", last).unwrap();
    assert_eq!(info.cleared, last);
    assert!(log.last_index() >= last);
    assert!(
        start.elapsed() < Duration::from_millis(900),
        "the clear waited {:?} for its record",
        start.elapsed()
    );
    log.close().unwrap();
}
