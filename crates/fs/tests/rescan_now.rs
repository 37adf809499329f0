//! The rescan asked for while the tracker runs (`Tracker::rescan`), on
//! ext4 and tmpfs: with every change already logged it finds none, logs
//! the MARK `fs tree rescanned` with its counts and no record flagged
//! `COMPARE`; it looks at every directory's times (the tree's, or those
//! the copy took from it) and reads only the directories changed since
//! they were taken (and the root, whose times the sync cookies move); a
//! path that is not a watched
//! root is refused. The comparison it makes is the restart's (`copy.rs`
//! checks what it finds when changes were missed).

mod support;

use support::journal::describe_all;
use support::run::{Run, at, mkdir, touch};
use support::scratch::{FsKind, scratch};
use weir_fs::record::FLAG_COMPARE;
use weir_fs::{Error, TrackerOptions};
use weir_log::{LogRecord, RecordType};

fn rescanned(rs: &[LogRecord]) -> Vec<&LogRecord> {
    rs.iter()
        .filter(|r| r.kind == RecordType::MARK && r.name == weir_fs::RESCANNED)
        .collect()
}

fn number(r: &LogRecord, key: &str) -> u64 {
    let v = r
        .field(key)
        .unwrap_or_else(|| panic!("no {key} in the MARK"));
    std::str::from_utf8(v).unwrap().parse().unwrap()
}

fn rescan_on_demand(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: rescan on demand");
    for d in ["a", "a/deep", "b", "c"] {
        mkdir(&s, d);
    }
    for f in ["a/f", "a/deep/g", "b/h", "top"] {
        touch(&s, f);
    }
    // Settled before the walk takes times (see `weir_fs::walk::settled`).
    std::thread::sleep(std::time::Duration::from_millis(150));
    let log_dir = base.mkdir("log");
    let run = Run::start(
        &s,
        &log_dir,
        TrackerOptions {
            index: Some(base.path().join("state/fs/index.redb")),
            ..TrackerOptions::default()
        },
    );
    let first = run.tracker.rescan(s.root()).expect("rescan");
    assert_eq!(first.changes, 0, "{what}: {first:?}");
    assert_eq!(first.entries, 8, "{what}: {first:?}");
    assert_eq!(first.dirs_checked, 5, "{what}: {first:?}");
    assert!(
        first.dirs_read <= 1,
        "{what}: only the root may have moved: {first:?}"
    );

    // A change the tracker logs: its directory is read by the next one.
    // The others' times are in the copy by then (the tree hands them over
    // with its first checkpoint).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // A sync turns the thread's loop over, which publishes the count.
    while {
        run.tracker.sync().expect("sync");
        run.tracker.stats().checkpoints == 0
    } {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: no checkpoint"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    touch(&s, "b/new");
    run.records();
    let second = run.tracker.rescan(s.root()).expect("rescan");
    assert_eq!(second.changes, 0, "{what}: {second:?}");
    assert_eq!(second.entries, 9, "{what}: {second:?}");
    assert!(
        (1..=2).contains(&second.dirs_read),
        "{what}: b, and perhaps the root: {second:?}"
    );
    let rs = run.records();
    let marks = rescanned(&rs);
    assert_eq!(marks.len(), 2, "{what}: {}", describe_all(&rs));
    let last = marks[1];
    assert_eq!(Some(last.index), second.index, "{what}");
    assert_eq!(
        last.field("root"),
        Some(s.root().as_os_str().as_encoded_bytes())
    );
    assert_eq!(
        [
            number(last, "entries"),
            number(last, "changes"),
            number(last, "dirs_checked"),
            number(last, "dirs_read")
        ],
        [9, 0, 5, second.dirs_read],
        "{what}"
    );
    assert!(
        rs.iter().all(|r| r.flags & FLAG_COMPARE == 0),
        "{what}: nothing to compare:\n{}",
        describe_all(&rs)
    );

    for not_root in [at(&s, "a"), base.path().to_path_buf()] {
        match run.tracker.rescan(&not_root) {
            Err(Error::NotARoot { path }) => {
                assert_eq!(path, std::fs::canonicalize(&not_root).unwrap(), "{what}")
            }
            other => panic!("{what}: rescan of {}: {other:?}", not_root.display()),
        }
    }
    run.stop();
}

support::private_ns_test!(
    rescan_on_demand_on_tmpfs,
    inner_rescan_on_demand_on_tmpfs,
    rescan_on_demand,
    FsKind::Tmpfs
);
support::private_ns_test!(
    rescan_on_demand_on_ext4,
    inner_rescan_on_demand_on_ext4,
    rescan_on_demand,
    FsKind::Ext4
);
