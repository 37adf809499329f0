//! A restart from the trees' persistent copy (`TrackerOptions::index`), on
//! ext4 and tmpfs, of a root that already held a tree when it was first
//! watched (the log alone never described it entry by entry):
//!
//! 1. a tracker with a copy watches the root, logs a few changes, and
//!    stops (its last checkpoint takes everything logged);
//! 2. with nothing watching: files created and unlinked, renames within
//!    and across directories, a directory with contents made, a subtree
//!    removed, a hard link;
//! 3. a new tracker on the same log and copy logs exactly those, flagged
//!    `RECONCILED | COMPARE`, and the MARK `fs tree reconciled`, not a new
//!    `fs root watched`: the records, applied to the tree as the first
//!    run left it, give the live tree; renames are RENMEs;
//!    only the directories whose times moved were read (the MARK counts
//!    them): the copy keeps each directory's times as taken before it was
//!    read, and the stop takes them again for those that changed;
//! 4. a third start with no change in between logs the MARK alone, and
//!    reads only the root (where the stop's sync cookie was made) and the
//!    directories the second start read (a rescan keeps no times);
//! 5. the log's consumer `weir-fs-index` has cleared no further than the
//!    copy covers, so retention keeps what a restart replays;
//! 6. a damaged copy is set aside and made again, never a reason not to
//!    watch.

mod support;

use std::path::Path;

use support::journal::describe_all;
use support::run::{Run, at, marks, mkdir, rename, touch};
use support::scratch::{FsKind, Scratch, scratch};
use weir_fs::TrackerOptions;
use weir_fs::record::{FLAG_COMPARE, decode};
use weir_log::{FLAG_RECONCILED, LogRecord, RecordType};

const RECONCILED: u16 = FLAG_RECONCILED | FLAG_COMPARE;

/// A run on the log in `log_dir`, with the copy at `index`.
fn run(s: &Scratch, log_dir: &Path, index: &Path) -> Run {
    Run::start(
        s,
        log_dir,
        TrackerOptions {
            index: Some(index.to_path_buf()),
            ..TrackerOptions::default()
        },
    )
}

fn restart_from_copy(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: restart from the copy");
    let log_dir = base.mkdir("log");
    let index = base.path().join("state/fs/index.redb");

    // A tree there before the first watch.
    for d in [
        "a",
        "a/deep",
        "b",
        "gone",
        "gone/inner",
        "still",
        "still/sub",
    ] {
        mkdir(&s, d);
    }
    for f in [
        "a/f1",
        "a/f2",
        "a/deep/f3",
        "b/f4",
        "gone/f5",
        "gone/inner/f6",
        "top",
        "still/s1",
        "still/sub/s2",
    ] {
        touch(&s, f);
    }

    // Settled before the walk takes times (see `weir_fs::walk::settled`).
    std::thread::sleep(std::time::Duration::from_millis(150));
    let first = run(&s, &log_dir, &index);
    touch(&s, "b/while-watched");
    rename(&s, "a/f2", "b/f2");
    let rs = first.records();
    assert_eq!(
        marks(&rs),
        [b"fs root watched".to_vec()],
        "{what}: {}",
        describe_all(&rs)
    );
    first.stop();
    // The tree as the first run left it: what the changes below apply to.
    let before = weir_fs::walk::read_tree(s.root()).expect("walk").0;

    // Nothing watches.
    touch(&s, "new-top");
    touch(&s, "a/deep/new");
    std::fs::remove_file(at(&s, "top")).unwrap();
    rename(&s, "a/f1", "a/f1-renamed");
    rename(&s, "b/f4", "a/deep/f4-moved");
    mkdir(&s, "made");
    touch(&s, "made/inside");
    std::fs::remove_dir_all(at(&s, "gone")).unwrap();
    std::fs::hard_link(at(&s, "b/f2"), at(&s, "a/f2-link")).unwrap();

    let second = run(&s, &log_dir, &index);
    let rs = second.records();
    assert_eq!(
        marks(&rs),
        [b"fs tree reconciled".to_vec()],
        "{what}: the second start:\n{}",
        describe_all(&rs)
    );
    // Only the directories whose times moved were read: the root, a,
    // a/deep and b (changed), and made (new); still and still/sub were
    // looked at, not read.
    let mark = rs.iter().find(|r| r.kind == RecordType::MARK).unwrap();
    assert_eq!(
        (mark.field("dirs_read"), mark.field("dirs_checked")),
        (Some(&b"5"[..]), Some(&b"7"[..])),
        "{what}: {}",
        describe_all(&rs)
    );
    let changes: Vec<&LogRecord> = rs.iter().filter(|r| r.kind != RecordType::MARK).collect();
    assert!(
        changes.iter().all(|r| r.flags & RECONCILED == RECONCILED),
        "{what}: every change found at the start is RECONCILED:\n{}",
        describe_all(&rs)
    );
    let renames = changes
        .iter()
        .filter(|r| r.kind == RecordType::RENME)
        .count();
    assert_eq!(
        renames,
        2,
        "{what}: the two renames:\n{}",
        describe_all(&rs)
    );
    // Applied to the tree as the first run left it, they give the live
    // tree.
    let mut tree = before;
    for r in &changes {
        let c = decode::change(&r.view()).unwrap_or_else(|| panic!("{what}: undecodable: {r:?}"));
        c.apply(&mut tree)
            .unwrap_or_else(|e| panic!("{what}: {e}: {}", describe_all(&rs)));
    }
    let live = weir_fs::walk::read_tree(s.root()).expect("walk").0;
    assert_eq!(
        tree.listing(),
        live.listing(),
        "{what}: replayed over the first run's tree"
    );
    // A change after the start is logged as usual.
    touch(&s, "after");
    let rs = second.records();
    assert!(
        rs.iter()
            .any(|r| r.kind == RecordType::CREAT && r.name == b"after" && r.flags == 0),
        "{what}: {}",
        describe_all(&rs)
    );
    // Settled, so that the stop takes their times.
    std::thread::sleep(std::time::Duration::from_millis(150));
    second.stop();

    let third = run(&s, &log_dir, &index);
    let rs = third.records();
    assert_eq!(
        (marks(&rs), rs.len()),
        (vec![b"fs tree reconciled".to_vec()], 1),
        "{what}: a start with nothing changed:\n{}",
        describe_all(&rs)
    );
    // The root alone read: the stop's sync cookie, made and removed in it
    // after its times were taken, moved them. The four others the last
    // start read were checkpointed without times (a rescan does not keep
    // the times it saw: the events of what changed while it read come
    // after it), and the stop took times again for them too. still and
    // still/sub keep the walk's.
    assert_eq!(
        (rs[0].field("dirs_read"), rs[0].field("dirs_checked")),
        (Some(&b"1"[..]), Some(&b"7"[..])),
        "{what}: {}",
        describe_all(&rs)
    );
    third.stop();
    // Once stopped: the consumer has cleared no further than the copy
    // covers (its checkpoints may have covered this run's own records).
    let log = weir_log::Log::open(&log_dir, weir_log::Options::default()).expect("open the log");
    let consumer = log
        .consumer_list()
        .into_iter()
        .find(|c| c.name == weir_fs::INDEX_CONSUMER)
        .unwrap_or_else(|| panic!("{what}: no consumer weir-fs-index"));
    log.close().expect("close the log");
    let copy = weir_fsindex::Index::open(&index).expect("open the copy");
    let covered = copy
        .snapshot()
        .expect("read the copy")
        .root(s.root().as_os_str().as_encoded_bytes())
        .expect("read the copy")
        .unwrap_or_else(|| panic!("{what}: the copy holds no root"))
        .covered;
    drop(copy);
    assert!(
        consumer.cleared <= covered && consumer.cleared > 0,
        "{what}: the consumer cleared {} (the copy covers {covered})",
        consumer.cleared
    );

    // A damaged copy is set aside and made again: the start is a fresh
    // one (the log alone never described this root), and the next one
    // starts from the new copy.
    std::fs::write(&index, b"not an index at all").unwrap();
    let fourth = run(&s, &log_dir, &index);
    let rs = fourth.records();
    assert_eq!(
        marks(&rs),
        [b"fs root watched".to_vec()],
        "{what}: a start over a damaged copy:\n{}",
        describe_all(&rs)
    );
    fourth.stop();
    let aside = base.path().join("state/fs/index.redb.damaged");
    assert_eq!(std::fs::read(&aside).unwrap(), b"not an index at all");
    let fifth = run(&s, &log_dir, &index);
    let rs = fifth.records();
    assert_eq!(
        marks(&rs),
        [b"fs tree reconciled".to_vec()],
        "{what}: the start after it:\n{}",
        describe_all(&rs)
    );
    fifth.stop();
}

support::private_ns_test!(
    restart_from_copy_on_ext4,
    inner_restart_from_copy_on_ext4,
    restart_from_copy,
    FsKind::Ext4
);
support::private_ns_test!(
    restart_from_copy_on_tmpfs,
    inner_restart_from_copy_on_tmpfs,
    restart_from_copy,
    FsKind::Tmpfs
);

/// A copy on a full filesystem: the first checkpoint fails, the tracker
/// goes on logging (the copy only saves work), and its stop still
/// succeeds; with room again, a start does not trust the half-written
/// copy (a fresh start: the root held entries), and the one after starts
/// from the new copy.
fn full_disk(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: a copy on a full filesystem");
    let log_dir = base.mkdir("log");
    let state = base.mkdir("small");
    let mount = |opts: &str| {
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "small"])
            .arg(&state)
            .status()
            .expect("mount");
        assert!(st.success(), "mount -o {opts}");
    };
    mount("size=192k");
    let index = state.join("fs/index.redb");
    for d in 0..40 {
        mkdir(&s, &format!("d{d}"));
        for f in 0..50 {
            touch(&s, &format!("d{d}/a-file-with-a-long-name-{f:04}"));
        }
    }
    let first = run(&s, &log_dir, &index);
    touch(&s, "while-watched");
    let rs = first.records();
    assert!(
        rs.iter().any(|r| r.name == b"while-watched"),
        "{what}: records go on: {}",
        describe_all(&rs)
    );
    assert_eq!(
        first.tracker.stats().checkpoints,
        0,
        "{what}: no checkpoint fits"
    );
    first.stop();
    // Made (so it was the build that failed, not the open).
    assert!(index.exists(), "{what}: the copy was not even made");
    mount("remount,size=64m");
    let second = run(&s, &log_dir, &index);
    let rs = second.records();
    assert_eq!(
        marks(&rs),
        [b"fs root watched".to_vec()],
        "{what}: the half-written copy is not trusted:\n{}",
        describe_all(&rs)
    );
    second.stop();
    touch(&s, "while-down");
    let third = run(&s, &log_dir, &index);
    let rs = third.records();
    assert_eq!(
        marks(&rs),
        [b"fs tree reconciled".to_vec()],
        "{what}: {}",
        describe_all(&rs)
    );
    assert!(
        rs.iter()
            .any(|r| r.name == b"while-down" && r.flags & RECONCILED == RECONCILED),
        "{what}: {}",
        describe_all(&rs)
    );
    third.stop();
}

support::private_ns_test!(
    full_disk_on_tmpfs,
    inner_full_disk_on_tmpfs,
    full_disk,
    FsKind::Tmpfs
);
