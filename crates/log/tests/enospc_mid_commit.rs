//! ENOSPC in the middle of a commit.
//!
//! `faults.rs` fails the first write of a commit, so nothing of it reaches
//! the file. Here short writes split one commit into many `write_at` calls
//! and the disk fills after a few of them: part of the commit is in the
//! file, the rest is not. The writer must get `Error::NoSpace`, the log
//! must stay readable (only whole records, in sequence) and appendable,
//! and once space is back the retry must go on after the bytes already
//! written, neither dropping nor repeating a record (rule 1 of
//! `docs/format.md`: a byte once written is never written again).

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{
    ENOSPC, Payload, check_log, check_sequence, read_dir, scan_segment, segment_files,
    wait_until_durable, within,
};
use weir_log::fault::FaultyFs;
use weir_log::segment::parse_segment_name;
use weir_log::{Appended, Error, Log, Options, Preallocation};

const SALT: u64 = 21;

fn opts(fs: &FaultyFs) -> Options {
    Options::default()
        // Room for every record of the test: no roll, whose seal would
        // write (and fail) too.
        .segment_size(1 << 20)
        // No zero-filling spare: its writes would count against the arm.
        .preallocation(Preallocation::Reserve)
        // The committer writes only when a durable wait asks: the whole
        // batch then goes out as one commit.
        .flush_interval(Duration::from_secs(60))
        .sync_interval(None)
        .fs(Arc::new(fs.clone()))
}

fn append(log: &Log, i: u64) -> Appended {
    let a = Payload::new(SALT, i).with(|r| log.append(r)).unwrap();
    assert_eq!(a.index(), i);
    a
}

#[test]
fn enospc_mid_commit_fails_the_writer_and_heals_without_loss() {
    within(60, "ENOSPC mid-commit test", || {
        let dir = tempfile::tempdir().unwrap();
        let fs = FaultyFs::new();
        let log = Log::open(dir.path(), opts(&fs)).unwrap();
        for i in 1..=10 {
            let a = append(&log, i);
            log.wait_durable(a).unwrap();
        }
        let committed = log.last_index();
        let written = log.stats().bytes_written;

        // About 120 KB of records, written 512 bytes at a time.
        fs.short_writes(Some(512));
        let mut pending: Vec<Appended> = (11..=200).map(|i| append(&log, i)).collect();
        fs.fail_writes(ENOSPC, 4, None);
        let last = *pending.last().unwrap();
        let err = log.wait_durable(last).unwrap_err();
        assert!(matches!(err, Error::NoSpace), "{err:?}");
        assert!(!log.is_poisoned(), "ENOSPC must not poison the log");

        // The fault fired mid-commit: the four writes it let through put
        // bytes of the batch in the file, and none of the batch was
        // committed.
        let s = log.stats();
        assert!(s.write_errors > 0, "{s:?}");
        assert_eq!(s.bytes_written - written, 4 * 512, "{s:?}");
        assert_eq!(log.last_index(), committed);
        let seg = segment_files(dir.path()).pop().unwrap();
        let scan = scan_segment(
            &std::fs::read(&seg).unwrap(),
            parse_segment_name(&seg).unwrap(),
        );
        assert!(
            scan.frames.iter().any(|&(_, i, _)| i > committed) || scan.nonzero_after.is_some(),
            "no byte of the failed commit is in the file: {scan:?}"
        );

        // Readable: the live reader stops at the committed index; a reader
        // of the directory also sees the whole frames of the failed commit,
        // never a torn one.
        let live: Vec<_> = log.reader(1).map(Result::unwrap).collect();
        assert_eq!(live.len() as u64, committed);
        check_sequence(&live, SALT);
        let on_disk = read_dir(dir.path());
        assert!(on_disk.len() as u64 >= committed);
        check_sequence(&on_disk, SALT);

        // Appendable while the disk is full.
        pending.extend((201..=250).map(|i| append(&log, i)));
        fs.heal();
        for a in pending {
            wait_until_durable(&log, a, |e| matches!(e, Error::NoSpace));
        }

        // Every record once, in order, with its payload: through the open
        // log, then from the directory (with `verify`), then reopened.
        let all: Vec<_> = log.reader(1).map(Result::unwrap).collect();
        assert_eq!(all.len(), 250);
        check_sequence(&all, SALT);
        log.close().unwrap();
        assert_eq!(check_log(dir.path(), SALT, 250), 250);
        let log = Log::open(dir.path(), opts(&FaultyFs::new())).unwrap();
        assert_eq!(log.recovery().next_index, 251);
        let again: Vec<_> = log.reader(1).map(Result::unwrap).collect();
        assert_eq!(again.len(), 250);
        check_sequence(&again, SALT);
        log.close().unwrap();
    });
}
