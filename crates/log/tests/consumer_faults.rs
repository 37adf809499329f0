//! Faults while saving consumer state or removing segments.
//!
//! The consumer set is saved by writing a temporary file, fsyncing it,
//! renaming it over `consumers.json` and fsyncing the directory. These
//! tests fail each step and check what the log believes afterwards:
//! - a write that fails leaves the old state, in memory and on disk, and
//!   the log goes on;
//! - any fsync that fails poisons the log, as a segment's does;
//! - once the rename is done, memory keeps the new state, as the file does;
//! - a segment is removed only after the state that lets it go is saved;
//! - a failed fsync of the directory after removing segments poisons;
//! - an eviction's MARK record is written only once the eviction is saved.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{EIO, ENOSPC, eventually, fill, read_dir, segment_files, within};
use weir_log::fault::FaultyFs;
use weir_log::fs::StdFs;
use weir_log::{Error, Log, Options, Record, RecordType, Retention, TypeMask, read_consumers};

const SEG: u64 = 64 * 1024;

fn opts(fs: &FaultyFs) -> Options {
    Options::default()
        .segment_size(SEG)
        .sync_interval(None)
        .fs(Arc::new(fs.clone()))
}

/// `name`'s cleared index as this log holds it, and as the file says.
fn cleared(log: &Log, dir: &std::path::Path, name: &str) -> (Option<u64>, Option<u64>) {
    let mem = log
        .consumer_list()
        .into_iter()
        .find(|c| c.name == name)
        .map(|c| c.cleared);
    let disk = read_consumers(&StdFs, dir, 0, 0)
        .unwrap()
        .into_iter()
        .find(|c| c.name == name)
        .map(|c| c.cleared);
    (mem, disk)
}

#[test]
fn a_failed_write_of_the_state_keeps_the_old_state_and_the_log_goes_on() {
    within(60, "consumer state write failure", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        log.register("a", TypeMask::all()).unwrap();
        fill(&log, 10);
        // Nothing else writes now: the next write is the state file's.
        fs.fail_writes(ENOSPC, 0, Some(1));
        let e = log.clear("a", 5).unwrap_err();
        assert!(matches!(e, Error::NoSpace | Error::Io { .. }), "{e:?}");
        assert!(!log.is_poisoned(), "a failed write is not an fsync failure");
        assert_eq!(cleared(&log, dir.path(), "a"), (Some(0), Some(0)));
        log.clear("a", 5).unwrap();
        assert_eq!(cleared(&log, dir.path(), "a"), (Some(5), Some(5)));
        fill(&log, 1);
        log.close().unwrap();
    });
}

#[test]
fn a_failed_fsync_of_the_new_state_file_poisons_and_keeps_the_old_state() {
    // Regression: an fsync failure while saving consumer state was returned
    // as a plain I/O error, and the log went on, though any fsync failure
    // poisons it.
    within(60, "consumer state fsync failure", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        log.register("a", TypeMask::all()).unwrap();
        fill(&log, 10);
        // Every record is durable: the next file fsync is the state file's.
        fs.fail_syncs(EIO, 0, Some(1));
        assert!(matches!(log.clear("a", 5), Err(Error::Io { .. })));
        assert!(log.is_poisoned());
        // The rename never happened: the old state, in memory and on disk.
        assert_eq!(cleared(&log, dir.path(), "a"), (Some(0), Some(0)));
        assert!(matches!(log.clear("a", 5), Err(Error::Poisoned)));
        assert!(matches!(
            log.register("b", TypeMask::all()),
            Err(Error::Poisoned)
        ));
        assert!(matches!(
            log.append(&Record::new(RecordType::CREAT)),
            Err(Error::Poisoned)
        ));
        assert!(matches!(log.close(), Err(Error::Poisoned)));
        // Reopened, the log works.
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        log.clear("a", 5).unwrap();
        assert_eq!(cleared(&log, dir.path(), "a"), (Some(5), Some(5)));
        log.close().unwrap();
    });
}

#[test]
fn a_failed_directory_fsync_after_the_rename_poisons_and_memory_keeps_the_new_state() {
    // Regression: when the directory's fsync failed after the new state
    // file had replaced the old, memory rolled back while the file (and any
    // reader in another process) had the new state.
    within(60, "consumer state directory fsync failure", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        log.register("a", TypeMask::all()).unwrap();
        fill(&log, 10);
        fs.fail_dir_syncs(EIO, 0, Some(1));
        assert!(matches!(log.clear("a", 5), Err(Error::Io { .. })));
        assert!(log.is_poisoned());
        assert_eq!(cleared(&log, dir.path(), "a"), (Some(5), Some(5)));
        drop(log);
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        assert_eq!(cleared(&log, dir.path(), "a"), (Some(5), Some(5)));
        log.close().unwrap();
    });
}

#[test]
fn a_failed_directory_fsync_after_removing_segments_poisons_the_log() {
    // Regression: retention only logged a failed fsync of the directory
    // after it removed segments, and the log went on.
    within(60, "directory fsync failure after removal", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        log.register("a", TypeMask::all()).unwrap();
        let last = fill(&log, 400);
        assert!(segment_files(dir.path()).len() >= 3);
        // The clear's save fsyncs the directory once; the removal of the
        // segments it frees is the next.
        fs.fail_dir_syncs(EIO, 1, Some(1));
        log.clear("a", last).unwrap();
        eventually("retention removes the cleared segments", || {
            segment_files(dir.path()).len() == 1
        });
        eventually("the log is poisoned", || log.is_poisoned());
        assert!(matches!(
            log.append(&Record::new(RecordType::CREAT)),
            Err(Error::Poisoned)
        ));
        drop(log);
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        assert!(log.first_index() > 1);
        fill(&log, 1);
        log.close().unwrap();
    });
}

#[test]
fn no_segment_is_removed_before_an_eviction_is_saved() {
    // Regression: when saving the state after an eviction failed, the
    // segments the evicted consumer held were removed anyway. A reopen then
    // brought the consumer back, reading from a segment that was gone.
    within(60, "eviction save failure", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let r = Retention {
            max_idle_time: Some(Duration::from_millis(300)),
            ..Retention::default()
        };
        let log = Log::open(dir.path(), opts(&fs).retention(r)).unwrap();
        log.register("sleepy", TypeMask::all()).unwrap();
        // Without MARK in its mask, the eviction's MARK record never waits
        // for "busy", which stays.
        log.register("busy", TypeMask::parse("CREAT").unwrap())
            .unwrap();
        let last = fill(&log, 400);
        log.clear("busy", last).unwrap();
        let before = segment_files(dir.path()).len();
        assert!(before >= 3);
        // Every write fails from here: the eviction's save, and the MARK
        // record that announces it.
        fs.fail_writes(ENOSPC, 0, None);
        eventually("the idle consumer is evicted", || {
            log.consumer_list().iter().all(|c| c.name != "sleepy")
        });
        // In memory nobody needs the old segments now, but the state on
        // disk still lists "sleepy" reading from the first.
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(cleared(&log, dir.path(), "sleepy"), (None, Some(0)));
        assert_eq!(
            segment_files(dir.path()).len(),
            before,
            "removed before saved"
        );
        fs.heal();
        eventually("the segments go once the state is saved", || {
            segment_files(dir.path()).len() == 1
        });
        assert_eq!(cleared(&log, dir.path(), "sleepy"), (None, None));
        log.close().unwrap();
    });
}

#[test]
fn a_save_that_fails_for_room_still_lets_go_what_the_file_on_disk_lets_go() {
    // Regression: while the consumer set was unsaved, retention removed no
    // segment at all, not even those the state on disk let go. On a full
    // disk the save needs the room a removal frees, so nothing was removed
    // again.
    within(60, "state save failure on a full disk", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        log.register("a", TypeMask::all()).unwrap();
        log.register("m", TypeMask::parse("MOUNT_ATTACH").unwrap())
            .unwrap();
        let last = fill(&log, 400);
        eventually("m is passed over every record", || {
            log.consumer_list()
                .iter()
                .all(|c| c.name != "m" || c.cleared == last)
        });
        // Saved: "a" and "m" have cleared every segment but the newest.
        log.clear("a", last).unwrap();
        // The pass at close moves "m" past the records below, and its save
        // of that move fails for room.
        fs.fail_writes_named("consumers.tmp", ENOSPC, 0, None);
        fill(&log, 10);
        log.close().unwrap();
        assert!(
            segment_files(dir.path()).len() <= 2,
            "kept {:?}",
            segment_files(dir.path())
        );
        // What the file says still holds: "m" reads on from there.
        fs.heal();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        let m = log.consumer_list().into_iter().find(|c| c.name == "m");
        assert_eq!(m.map(|c| c.cleared), Some(last));
        let n = log.consumer_reader("m").unwrap().count();
        assert_eq!(n, 0, "m's mask takes none of the records");
        log.close().unwrap();
    });
}

/// A log in `dir` whose consumer "sleepy" was evicted as idle (after
/// 300 ms with three records waiting) while the writes of the consumer
/// state fail, and still fail; records still commit.
fn evicted_while_saves_fail(dir: &std::path::Path, fs: &FaultyFs) -> Log {
    let r = Retention {
        max_idle_time: Some(Duration::from_millis(300)),
        ..Retention::default()
    };
    let log = Log::open(dir, opts(fs).retention(r)).unwrap();
    log.register("sleepy", TypeMask::all()).unwrap();
    fill(&log, 3);
    fs.fail_writes_named("consumers.tmp", ENOSPC, 0, None);
    eventually("the idle consumer is evicted", || {
        log.consumer_list().iter().all(|c| c.name != "sleepy")
    });
    log
}

/// The consumers named by the eviction MARK records of the log in `dir`.
fn evictions(dir: &std::path::Path) -> Vec<Vec<u8>> {
    read_dir(dir)
        .into_iter()
        .filter(|r| r.kind == RecordType::MARK)
        .filter(|r| r.field("event") == Some(b"consumer-evicted".as_slice()))
        .map(|r| r.target)
        .collect()
}

#[test]
fn an_eviction_is_announced_only_once_it_is_saved() {
    // Regression: the MARK record that announces an eviction was written
    // even when saving the eviction failed, so a crash before a later save
    // brought back, on reopen, a consumer the log said was gone.
    within(60, "eviction MARK before its save", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = evicted_while_saves_fail(dir.path(), &fs);
        std::thread::sleep(Duration::from_millis(1200));
        let last = fill(&log, 2);
        assert_eq!(
            evictions(dir.path()),
            Vec::<Vec<u8>>::new(),
            "announced before saved"
        );
        assert_eq!(cleared(&log, dir.path(), "sleepy"), (None, Some(0)));
        fs.heal();
        eventually("the eviction is announced once saved", || {
            log.sync().unwrap();
            evictions(dir.path()) == [b"sleepy".to_vec()]
        });
        assert_eq!(cleared(&log, dir.path(), "sleepy"), (None, None));
        let mark = read_dir(dir.path())
            .into_iter()
            .find(|r| r.kind == RecordType::MARK)
            .unwrap();
        assert!(mark.index > last, "written after the save, not before");
        log.close().unwrap();
    });
}

#[test]
fn an_eviction_the_log_closes_without_saving_is_never_announced() {
    // The other half of the regression above: a close whose save of an
    // eviction fails must neither hang on the waiting MARK nor write it,
    // for the reopened log has the consumer again.
    within(60, "unsaved eviction at close", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = evicted_while_saves_fail(dir.path(), &fs);
        log.close().unwrap();
        assert!(evictions(dir.path()).is_empty());
        fs.heal();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        let back = log.consumer_list().into_iter().find(|c| c.name == "sleepy");
        assert_eq!(back.map(|c| c.cleared), Some(0));
        assert_eq!(log.consumer_reader("sleepy").unwrap().count(), 3);
        log.close().unwrap();
    });
}

#[test]
fn an_eviction_taken_back_at_close_is_not_saved_later_unannounced() {
    // Regression: a close whose save of an eviction failed forgot the
    // eviction's MARK but kept the consumer out of memory. A later pass of
    // the same close (its writes retried once room came back) then saved
    // the set without the consumer, and no MARK ever said it was evicted.
    within(60, "unsaved eviction at a close that recovers", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = evicted_while_saves_fail(dir.path(), &fs);
        // Every write fails now, the record's too, so close retries; room
        // comes back while it does.
        fs.fail_writes(ENOSPC, 0, None);
        let _ = log.append(&Record::new(RecordType::CREAT).name(b"late"));
        let healer = {
            let fs = fs.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                fs.heal();
            })
        };
        log.close().unwrap();
        healer.join().unwrap();
        let saved = read_consumers(&StdFs, dir.path(), 0, 0).unwrap();
        let named = saved.iter().any(|c| c.name == "sleepy");
        let announced = evictions(dir.path()) == [b"sleepy".to_vec()];
        assert!(
            named != announced,
            "the file names sleepy: {named}; a MARK says it was evicted: {announced}"
        );
    });
}

#[test]
fn a_segment_dropped_is_announced_while_an_eviction_waits_for_its_save() {
    // An eviction's MARK waits for its save; one for segments the size
    // limit dropped must not wait behind it, for those records are gone
    // whatever becomes of the eviction.
    within(60, "drop MARK behind an unsaved eviction", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let r = Retention {
            // Long enough that "pinned" is not idle yet when the test
            // ends on a slow machine (about a second after it registers).
            max_idle_time: Some(Duration::from_secs(4)),
            max_bytes: 6 * SEG,
            on_full: weir_log::FullPolicy::DropOldest,
            ..Retention::default()
        };
        let log = Log::open(dir.path(), opts(&fs).retention(r)).unwrap();
        log.register("sleepy", TypeMask::all()).unwrap();
        fill(&log, 3);
        std::thread::sleep(Duration::from_millis(4100));
        // Not idle for four seconds from here: it holds segments the size
        // limit then drops.
        log.register("pinned", TypeMask::all()).unwrap();
        fs.fail_writes_named("consumers.tmp", ENOSPC, 0, None);
        eventually("the idle consumer is evicted", || {
            log.consumer_list().iter().all(|c| c.name != "sleepy")
        });
        fill(&log, 1000);
        // The MARKs there are, by event (the oldest records are gone).
        let marks = || -> Vec<Vec<u8>> {
            log.sync().unwrap();
            log.reader(log.first_index())
                .map(|r| r.unwrap())
                .filter(|r| r.kind == RecordType::MARK)
                .filter_map(|r| r.field("event").map(<[u8]>::to_vec))
                .collect()
        };
        eventually("the drop is announced", || {
            marks().contains(&b"segment-dropped".to_vec())
        });
        assert!(log.consumer_list().iter().any(|c| c.name == "pinned"));
        assert!(!marks().contains(&b"consumer-evicted".to_vec()));
        fs.heal();
        log.close().unwrap();
    });
}
