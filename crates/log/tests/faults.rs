//! Injected faults: errors, short writes and failed fsyncs from `FaultyFs`.
//!
//! Each test arms [`FaultyFs`] and checks the documented behaviour:
//! - an fsync error poisons the log until it is reopened, and nothing that
//!   was acknowledged durable before it is lost;
//! - ENOSPC (on a write or on a segment's preallocation) returns
//!   `Error::NoSpace` to durable writers, keeps the log readable, and once
//!   space is back the same log writes every queued record, once, in order;
//! - other write errors (EIO) are retried the same way;
//! - short writes lose nothing, even combined with write errors.

mod support;

use std::sync::Arc;

use support::{
    EIO, ENOSPC, Payload, check_log, read_dir, segment_files, wait_until_durable, within,
};
use weir_log::fault::{FaultyFs, PowerCut};
use weir_log::{Error, Field, Log, Options, Record, RecordType};

fn opts(fs: &FaultyFs) -> Options {
    Options::default()
        .segment_size(64 * 1024)
        .fs(Arc::new(fs.clone()))
}

/// Appends `Payload::new(salt, i)` for the next index; checks the index.
fn append(log: &Log, salt: u64, expect: u64) -> weir_log::Appended {
    let a = Payload::new(salt, expect)
        .with(|r| log.append(r))
        .unwrap_or_else(|e| panic!("append of {expect}: {e}"));
    assert_eq!(a.index(), expect);
    a
}

fn append_durable(log: &Log, salt: u64, expect: u64) -> u64 {
    let d = Payload::new(salt, expect)
        .with(|r| log.append_durable(r))
        .unwrap_or_else(|e| panic!("durable append of {expect}: {e}"));
    assert_eq!(d.index(), expect);
    d.index()
}

/// The errors a wait begun before a fault was healed may still see.
fn retryable(e: &Error) -> bool {
    matches!(e, Error::NoSpace | Error::Io { .. })
}

#[test]
fn fsync_error_poisons_the_log_and_loses_nothing_acknowledged() {
    within(60, "fsync-error test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 1;
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        for i in 1..=20 {
            append_durable(&log, salt, i);
        }
        fs.fail_syncs(EIO, 0, None);
        let err = Payload::new(salt, 21)
            .with(|r| log.append_durable(r))
            .unwrap_err();
        assert!(matches!(err, Error::Poisoned | Error::Io { .. }), "{err:?}");
        assert!(log.is_poisoned());
        let e = Payload::new(salt, 22).with(|r| log.append(r)).unwrap_err();
        assert!(matches!(e, Error::Poisoned), "append after poison: {e:?}");
        assert!(matches!(log.sync(), Err(Error::Poisoned)));
        // Readers still see the committed prefix, record 21 included (it
        // reached the OS; only its fsync failed).
        let recs: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
        assert!(recs.len() >= 20, "{} records readable", recs.len());
        for r in &recs {
            assert!(Payload::new(salt, r.index).matches(r), "{r:?}");
        }
        assert!(matches!(log.close(), Err(Error::Poisoned)));

        // Reopen on the real filesystem: everything acknowledged is there.
        let log = Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
        assert!(!log.is_poisoned());
        let next = log.recovery().next_index;
        assert!(next > 20, "{:?}", log.recovery());
        append_durable(&log, salt, next);
        log.close().unwrap();
        check_log(dir.path(), salt, next);
    });
}

#[test]
fn fsync_error_at_seal_poisons_and_a_power_cut_keeps_acknowledged_records() {
    within(60, "seal fsync test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 2;
        // No periodic sync: after the durable appends below, the only fsync
        // is the one that seals the full segment.
        let log = Log::open(dir.path(), opts(&fs).sync_interval(None)).unwrap();
        for i in 1..=10 {
            append_durable(&log, salt, i);
        }
        fs.fail_syncs(EIO, 0, Some(1));
        let mut i = 11;
        let err = loop {
            match Payload::new(salt, i).with(|r| log.append(r)) {
                Ok(a) => assert_eq!(a.index(), i),
                Err(e) => break e,
            }
            i += 1;
            if i.is_multiple_of(64) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(i < 100_000, "the segment was never sealed");
        };
        assert!(matches!(err, Error::Poisoned), "{err:?}");
        assert!(log.is_poisoned());
        assert_eq!(
            segment_files(dir.path()).len(),
            1,
            "no segment may follow a failed seal"
        );
        assert!(matches!(log.sync(), Err(Error::Poisoned)));
        drop(log);
        // The kernel may have dropped the pages whose fsync failed.
        fs.power_cut(PowerCut::LoseAll).unwrap();
        let log = Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
        assert_eq!(log.recovery().next_index, 11, "{:?}", log.recovery());
        append_durable(&log, salt, 11);
        drop(log);
        assert_eq!(check_log(dir.path(), salt, 11), 11);
    });
}

#[test]
fn fsync_error_creating_a_segment_poisons_the_log() {
    // Regression: an fsync failure while creating a segment (its header's,
    // or the directory's) was retried as a write error, though any fsync
    // failure poisons the log.
    within(60, "segment create fsync test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 10;
        let log = Log::open(dir.path(), opts(&fs).sync_interval(None)).unwrap();
        // The first record makes the first segment, whose header's fsync
        // fails.
        fs.fail_syncs(EIO, 0, Some(1));
        let a = append(&log, salt, 1);
        let waited = log.wait_durable(a);
        assert!(matches!(waited, Err(Error::Poisoned)), "{waited:?}");
        assert!(log.is_poisoned());
        drop(log);
        // Reopened, the log works; record 1 was never acknowledged durable.
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        let next = log.recovery().next_index;
        append_durable(&log, salt, next);
        drop(log);
        assert_eq!(check_log(dir.path(), salt, next), next);
    });
}

#[test]
fn fsync_error_while_sealing_on_close_is_reported_by_close() {
    // Regression: a failed fsync while close sealed the active segment was
    // only logged: close returned Ok, and the log kept its spare, as if
    // the log were sound.
    within(60, "close seal fsync test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 9;
        let log = Log::open(dir.path(), opts(&fs).sync_interval(None)).unwrap();
        for i in 1..=10 {
            append_durable(&log, salt, i);
        }
        fs.fail_syncs(EIO, 0, None);
        let closed = log.close();
        assert!(matches!(closed, Err(Error::Poisoned)), "{closed:?}");
        fs.heal();
        // The records were durable before the seal; the next open seals.
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        assert_eq!(log.recovery().next_index, 11, "{:?}", log.recovery());
        drop(log);
        assert_eq!(check_log(dir.path(), salt, 10), 10);
    });
}

/// ENOSPC (or another write error) on writes: durable waiters get the error,
/// the log stays readable, and after `heal` the same log catches up.
fn write_error_then_heal(errno: i32, salt: u64) {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    let log = Log::open(dir.path(), opts(&fs)).unwrap();
    let mut i = 1;
    while i <= 10 {
        append_durable(&log, salt, i);
        i += 1;
    }
    fs.fail_writes(errno, 0, None);
    let a = append(&log, salt, i);
    i += 1;
    let err = log.wait_durable(a).unwrap_err();
    if errno == ENOSPC {
        assert!(matches!(err, Error::NoSpace), "{err:?}");
    } else {
        assert!(
            matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(errno)),
            "{err:?}"
        );
    }
    assert!(!log.is_poisoned(), "a write error must not poison the log");
    // Readable: the committed prefix, intact.
    let before: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
    assert!(before.len() >= 10);
    assert!(
        before
            .iter()
            .all(|r| Payload::new(salt, r.index).matches(r))
    );
    // Appends still succeed while the ring has room, across segment rolls.
    let mut pending = vec![a];
    while i <= 120 {
        pending.push(append(&log, salt, i));
        i += 1;
    }
    assert!(log.stats().write_errors > 0);
    fs.heal();
    for a in pending {
        wait_until_durable(&log, a, retryable);
    }
    while i <= 200 {
        append_durable(&log, salt, i);
        i += 1;
    }
    // The same log serves every record exactly once, in order.
    let all: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
    assert_eq!(all.len(), 200);
    for (k, r) in all.iter().enumerate() {
        assert_eq!(r.index, k as u64 + 1);
        assert!(Payload::new(salt, r.index).matches(r), "{r:?}");
    }
    log.close().unwrap();
    assert_eq!(check_log(dir.path(), salt, 200), 200);
}

#[test]
fn enospc_on_write_returns_no_space_and_heals_without_loss() {
    within(60, "ENOSPC write test", || write_error_then_heal(ENOSPC, 3));
}

#[test]
fn eio_on_write_is_retried_like_enospc() {
    within(60, "EIO write test", || write_error_then_heal(EIO, 4));
}

#[test]
fn enospc_on_segment_preallocation_then_heal() {
    within(60, "ENOSPC fallocate test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 5;
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        append_durable(&log, salt, 1);
        fs.fail_allocs(ENOSPC, 0, None);
        // Durable appends fill the first segment; the one that needs a new
        // segment gets NoSpace.
        let mut i = 2;
        let stuck = loop {
            let a = append(&log, salt, i);
            i += 1;
            match log.wait_durable(a) {
                Ok(_) => assert!(i < 1000, "the next segment was never needed"),
                Err(Error::NoSpace) => break a,
                Err(e) => panic!("expected NoSpace, got {e:?}"),
            }
        };
        // The full segment was sealed; the failed one left no file behind.
        assert_eq!(
            segment_files(dir.path()).len(),
            1,
            "{:?}",
            segment_files(dir.path())
        );
        let readable: Vec<_> = log.reader(1).map(|r| r.unwrap().index).collect();
        assert_eq!(readable, (1..stuck.index()).collect::<Vec<_>>());
        assert_eq!(read_dir(dir.path()).len() as u64, stuck.index() - 1);
        let mut pending = vec![stuck];
        for _ in 0..30 {
            pending.push(append(&log, salt, i));
            i += 1;
        }
        fs.heal();
        for a in pending {
            wait_until_durable(&log, a, retryable);
        }
        append_durable(&log, salt, i);
        assert!(segment_files(dir.path()).len() >= 2);
        log.close().unwrap();
        assert_eq!(check_log(dir.path(), salt, i), i);
    });
}

#[test]
fn appends_fail_fast_with_no_space_once_the_ring_is_full() {
    within(60, "ring-full test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 6;
        // Every write fails once the new log's incarnation file is
        // written: not even the first segment's header can be, so nothing
        // leaves the ring.
        fs.fail_writes(ENOSPC, 1, None);
        let log = Log::open(dir.path(), opts(&fs).ring_slots(64)).unwrap();
        let mut i = 1;
        let err = loop {
            match Payload::new(salt, i).with(|r| log.append(r)) {
                Ok(a) => assert_eq!(a.index(), i),
                Err(e) => break e,
            }
            i += 1;
            assert!(i <= 65, "more appends accepted than the ring holds");
        };
        assert_eq!(i, 65, "the ring holds 64 records");
        assert!(matches!(err, Error::NoSpace), "{err:?}");
        fs.heal();
        let d = log.sync().unwrap().unwrap();
        assert_eq!(d.index(), 64);
        append_durable(&log, salt, 65);
        log.close().unwrap();
        assert_eq!(check_log(dir.path(), salt, 65), 65);
    });
}

/// Many records, several segment rolls, every write cut to `max` bytes.
fn short_writes(max: usize, records: u64, salt: u64) {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultyFs::new();
    fs.short_writes(Some(max));
    let log = Log::open(dir.path(), opts(&fs)).unwrap();
    for i in 1..=records {
        if i.is_multiple_of(7) {
            append_durable(&log, salt, i);
        } else {
            let _ = append(&log, salt, i);
        }
    }
    assert_eq!(log.sync().unwrap().unwrap().index(), records);
    let live: Vec<_> = log.reader(1).map(|r| r.unwrap()).collect();
    assert_eq!(live.len() as u64, records);
    assert!(log.stats().segments >= 3, "{:?}", log.stats());
    log.close().unwrap();
    assert_eq!(check_log(dir.path(), salt, records), records);
    // And the directory reopens clean.
    let log = Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
    assert_eq!(log.recovery().next_index, records + 1);
    assert!(log.recovery().torn.is_none(), "{:?}", log.recovery());
}

#[test]
fn short_writes_of_7_bytes_lose_nothing() {
    within(120, "7-byte short writes", || short_writes(7, 400, 7));
}

#[test]
fn short_writes_of_1_byte_lose_nothing() {
    within(120, "1-byte short writes", || short_writes(1, 150, 8));
}

#[test]
fn short_writes_interrupted_by_errors_resume_where_they_stopped() {
    within(60, "short writes with errors", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let salt = 9;
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        append_durable(&log, salt, 1);
        // Writes of 100 bytes; the 5th and 6th from now fail, so a commit
        // stops part-way and must continue exactly after what was written.
        fs.short_writes(Some(100));
        fs.fail_writes(EIO, 4, Some(2));
        let mut pending = Vec::new();
        for i in 2..=300 {
            pending.push(append(&log, salt, i));
        }
        for a in pending {
            wait_until_durable(&log, a, retryable);
        }
        assert!(log.stats().write_errors >= 1);
        log.close().unwrap();
        assert_eq!(check_log(dir.path(), salt, 300), 300);
    });
}

/// Regression: a record that does not fit the active segment stays in its
/// ring slot while the segment rolls. The ring used to shrink large slots
/// (over 64 KiB of capacity) on every `take`, even when the committer left
/// the frame in place, so the record was lost and the committer panicked
/// on an empty frame; `sync` then waited forever. Found by this suite; the
/// fix is in `ring.rs` (`take` shrinks only a consumed frame).
#[test]
fn regression_large_record_at_segment_roll_is_not_lost() {
    within(60, "large records at roll", || {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path(), Options::default().segment_size(1 << 20)).unwrap();
        let blobs: Vec<Vec<u8>> = (0..6).map(|k| support::bytes(k, 200 << 10)).collect();
        for (k, b) in blobs.iter().enumerate() {
            let f = [Field { key: "b", value: b }];
            let a = log
                .append(&Record::new(RecordType::CREAT).fields(&f))
                .unwrap();
            assert_eq!(a.index(), k as u64 + 1);
        }
        assert_eq!(log.sync().unwrap().unwrap().index(), 6);
        log.close().unwrap();
        let recs = read_dir(dir.path());
        assert_eq!(recs.len(), 6);
        for (r, b) in recs.iter().zip(&blobs) {
            assert_eq!(r.field("b"), Some(&b[..]), "record {}", r.index);
        }
        assert!(
            segment_files(dir.path()).len() >= 2,
            "the records must span a roll"
        );
    });
}
