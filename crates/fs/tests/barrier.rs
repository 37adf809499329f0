//! The sync barrier: `Tracker::sync` returns only once every change made
//! before it is in the log, durably. 1000 rounds of: a file with a fresh
//! name made in the root or a directory below it (every tenth by another
//! process), `sync`, then the log read from its directory as another
//! process would (`weir_log::Reader::open_dir`): the round's CREAT must be
//! there, and nothing else. On tmpfs, ext4, xfs and a btrfs subvolume.
//!
//! The barrier is a cookie file the tracker makes and removes in each
//! root: its events queue behind every earlier change. The cookies are
//! the tracker's, not the user's, so no record may ever name one, and none
//! may be left in the tree once the tracker has stopped.
//!
//! And a sync must be answered whenever it comes: also while the tracker
//! waits out a batch after reading events
//! (`sync_during_a_batch_wait_on_tmpfs`), and while a storm keeps a tiny
//! queue overflowing, so that a cookie's own event may be lost
//! (`sync_while_events_are_lost_on_tmpfs`). A hung sync fails its test
//! through a watchdog rather than never ending.

mod support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use support::journal::{assert_replay_is_live, describe, describe_all, fsid, live_id, open_log};
use support::names::COOKIE_PREFIX;
use support::scratch::{FsKind, scratch};
use weir_fs::{ObjectId, Tracker, TrackerOptions};
use weir_log::{LogRecord, Reader, RecordType};

const ROUNDS: usize = 1000;
/// How long a `sync` may take before the test calls it hung. Not a speed
/// requirement (a sync takes milliseconds): only what turns a hang into a
/// failure rather than a test that never ends.
const HUNG: Duration = Duration::from_secs(60);

/// `tracker.sync()`, or the process ends failing (exit status 101, which
/// the outer test reports with this message) if it has not returned after
/// [`HUNG`]: nothing interrupts a hung sync, and a panic on another thread
/// would not end the test.
fn sync_or_fail(tracker: &Tracker, what: &str) -> weir_fs::Result<()> {
    let (done, wait) = mpsc::channel::<()>();
    let what = what.to_owned();
    let dog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(HUNG) {
            eprintln!("{what}: sync() has not returned after {HUNG:?}: it is hung");
            std::process::exit(101);
        }
    });
    let r = tracker.sync();
    drop(done);
    dog.join().expect("the watchdog");
    r
}

/// Whether `path` (relative, `/`-separated) has a component that is a
/// cookie's name.
fn names_a_cookie(path: &[u8]) -> bool {
    path.split(|&b| b == b'/')
        .any(|c| c.starts_with(COOKIE_PREFIX))
}

/// Everything `reader` has now.
fn read_all(reader: &mut Reader) -> Vec<LogRecord> {
    let mut out = Vec::new();
    while let Some(r) = reader.next_record().expect("reading the log") {
        out.push(r);
    }
    out
}

fn barrier_on(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: barrier");
    let log_dir = base.mkdir("log");
    let log = open_log(&log_dir);
    let tracker = Tracker::start(
        Some(log.clone()),
        TrackerOptions {
            roots: vec![s.root().to_path_buf()],
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{what}: starting the tracker: {e}"));
    // Files go in turn to the root and two directories below it.
    let dirs: [&[u8]; 3] = [b"", b"sub", b"sub/deeper"];
    std::fs::create_dir_all(s.root().join("sub/deeper")).expect("mkdir");
    tracker.sync().expect("sync");
    let mut reader = Reader::open_dir(&log_dir, 1).with_mask(weir_fs::record::mask());
    let start = read_all(&mut reader);
    let mark = start
        .iter()
        .find(|r| r.kind == RecordType::MARK)
        .unwrap_or_else(|| panic!("{what}: no MARK:\n{}", describe_all(&start)));
    // The fsid the events carry, from the MARK's target (the root's id):
    // on btrfs it is the top level's, not what statfs of the root says.
    let events_fsid = ObjectId::from_bytes(&mark.target).expect("an id").fsid();
    if kind != FsKind::Btrfs {
        assert_eq!(events_fsid, fsid(s.root()), "{what}");
    }
    let dir_ids: Vec<ObjectId> = dirs
        .iter()
        .map(|d| live_id(events_fsid, &s.root().join(OsStr::from_bytes(d))))
        .collect();

    let mut all = start;
    for round in 0..ROUNDS {
        let d = round % dirs.len();
        let name = format!("r{round}").into_bytes();
        let rel = support::tree::join(dirs[d], &name);
        let path = s.root().join(OsStr::from_bytes(&rel));
        if round % 10 == 9 {
            // Another process's change, made (and the process gone)
            // before the sync.
            let st = Command::new("touch")
                .arg(&path)
                .status()
                .expect("run touch(1)");
            assert!(st.success(), "touch {}: {st}", path.display());
        } else {
            std::fs::File::create(&path)
                .unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        }
        sync_or_fail(&tracker, &format!("{what}: round {round}"))
            .unwrap_or_else(|e| panic!("{what}: round {round}: sync: {e}"));
        let rs = read_all(&mut reader);
        // touch(1) also sets the new file's times: its SATTR may follow.
        let by_touch = round % 10 == 9;
        let fits = match &rs[..] {
            [_] => true,
            [_, attr] => by_touch && attr.kind == RecordType::SATTR && attr.target == rs[0].target,
            _ => false,
        };
        assert!(
            fits,
            "{what}: round {round}: expected the CREAT of {} alone, got:\n{}",
            support::tree::show(&rel),
            describe_all(&rs)
        );
        let r = &rs[0];
        let ctx = || format!("{what}: round {round}: {}", describe(r));
        assert_eq!(r.kind, RecordType::CREAT, "{}", ctx());
        assert_eq!(r.name, name, "{}", ctx());
        assert_eq!(r.field("path"), Some(&rel[..]), "{}", ctx());
        assert_eq!(
            ObjectId::from_bytes(&r.parent).as_ref(),
            Some(&dir_ids[d]),
            "{}",
            ctx()
        );
        assert_eq!(
            ObjectId::from_bytes(&r.target),
            Some(live_id(events_fsid, &path)),
            "{}",
            ctx()
        );
        all.extend(rs);
    }
    let stats = tracker.stats();
    tracker.stop().expect("stop");
    all.extend(read_all(&mut reader));

    // No record names a cookie, in its name or in any path it carries.
    let cookies: Vec<&LogRecord> = all
        .iter()
        .filter(|r| {
            r.name.starts_with(COOKIE_PREFIX)
                || ["path", "spath", "sname"]
                    .iter()
                    .any(|k| r.field(k).is_some_and(names_a_cookie))
        })
        .collect();
    assert!(
        cookies.is_empty(),
        "{what}: records naming a cookie:\n{}",
        cookies
            .iter()
            .map(|r| describe(r))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // None is left behind.
    let left: Vec<String> = std::fs::read_dir(s.root())
        .expect("read the root")
        .map(|e| e.expect("an entry").file_name())
        .filter(|n| n.as_bytes().starts_with(COOKIE_PREFIX))
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "{what}: cookies left in the root: {left:?}"
    );
    assert_replay_is_live(&log, s.root(), &what);
    eprintln!(
        "{what}: {ROUNDS} rounds, {} sync rounds, {} records",
        stats.syncs,
        all.len()
    );
}

/// A sync asked for while the tracker waits out a batch (after a read of
/// events it lets the next ones gather for `batch`) must still be
/// answered, wherever in that wait it comes. A long batch (50 ms) and a
/// change 0 to 45 ms before each sync put the requests at points all
/// through it. (Before 588d8f6 such a request's wakeup was consumed by the
/// wait and the sync hung until some other event came.)
fn sync_during_a_batch_wait(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: sync during a batch wait");
    let log = open_log(&base.mkdir("log"));
    let tracker = Tracker::start(
        Some(log.clone()),
        TrackerOptions {
            roots: vec![s.root().to_path_buf()],
            batch: Duration::from_millis(50),
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{what}: starting the tracker: {e}"));
    for round in 0..20 {
        let name = format!("r{round}");
        std::fs::File::create(s.root().join(&name)).expect("create");
        std::thread::sleep(Duration::from_millis(5 * (round % 10)));
        sync_or_fail(&tracker, &format!("{what}: round {round}"))
            .unwrap_or_else(|e| panic!("{what}: round {round}: sync: {e}"));
        let found = support::journal::records_from(&log, 1)
            .iter()
            .any(|r| r.kind == RecordType::CREAT && r.name == name.as_bytes());
        assert!(
            found,
            "{what}: round {round}: no CREAT of {name} after the sync"
        );
    }
    tracker.stop().expect("stop");
    assert_replay_is_live(&log, s.root(), &what);
}

/// Syncs while a storm keeps a tiny queue overflowing: a cookie's event
/// may be among those the kernel drops, and the sync must still be
/// answered (by the comparison after the loss), never hang.
fn sync_while_events_are_lost(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: sync while events are lost");
    let log = open_log(&base.mkdir("log"));
    // Read by fanotify_init only: the tracker's group gets it, and the
    // host's value comes back at once.
    let tracker = {
        let _q = support::sysctl::Sysctl::set("/proc/sys/fs/fanotify/max_queued_events", "64");
        Tracker::start(
            Some(log.clone()),
            TrackerOptions {
                roots: vec![s.root().to_path_buf()],
                ..TrackerOptions::default()
            },
            None,
        )
        .unwrap_or_else(|e| panic!("{what}: starting the tracker: {e}"))
    };
    let done = Arc::new(AtomicBool::new(false));
    let storm = {
        let (done, root) = (done.clone(), s.root().to_path_buf());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                for i in 0..500 {
                    std::fs::File::create(root.join(format!("s{i}"))).expect("create");
                }
                for i in 0..500 {
                    std::fs::remove_file(root.join(format!("s{i}"))).expect("unlink");
                }
            }
        })
    };
    for round in 0..20 {
        sync_or_fail(&tracker, &format!("{what}: round {round}"))
            .unwrap_or_else(|e| panic!("{what}: round {round}: sync: {e}"));
        std::thread::sleep(Duration::from_millis(10));
    }
    done.store(true, Ordering::Relaxed);
    storm.join().expect("the storm");
    sync_or_fail(&tracker, &what).expect("sync");
    let lost = support::journal::records_from(&log, 1)
        .iter()
        .filter(|r| r.kind == RecordType::MARK && r.name == b"fs events lost: tree compared")
        .count();
    assert!(lost >= 1, "{what}: a queue of 64 events never overflowed");
    tracker.stop().expect("stop");
    assert_replay_is_live(&log, s.root(), &what);
}

support::private_ns_test!(
    sync_while_events_are_lost_on_tmpfs,
    inner_sync_while_events_are_lost_on_tmpfs,
    sync_while_events_are_lost,
    FsKind::Tmpfs
);

#[test]
fn sync_during_a_batch_wait_on_tmpfs() {
    support::run_in_private_ns("inner_sync_during_a_batch_wait_on_tmpfs");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_sync_during_a_batch_wait_on_tmpfs() {
    sync_during_a_batch_wait(FsKind::Tmpfs);
}

support::private_ns_test!(
    barrier_on_tmpfs,
    inner_barrier_on_tmpfs,
    barrier_on,
    FsKind::Tmpfs
);
support::private_ns_test!(
    barrier_on_ext4,
    inner_barrier_on_ext4,
    barrier_on,
    FsKind::Ext4
);
support::private_ns_test!(
    barrier_on_xfs,
    inner_barrier_on_xfs,
    barrier_on,
    FsKind::Xfs
);
support::private_ns_test!(
    barrier_on_btrfs_subvolume,
    inner_barrier_on_btrfs_subvolume,
    barrier_on,
    FsKind::Btrfs
);
