//! A restart's progress, as `Tracker::roots` shows it while the thread
//! works: on tmpfs, a tree too big for the start's budget (40,000 files in
//! 200 directories) is watched with a persistent copy and stopped, a few
//! changes are made, and a new tracker restarts from the copy. Polled while
//! it reads, its progress goes through the restart's phases in order
//! (loading the copy, replaying the log's tail, rescanning the
//! directories, comparing), each count within its total: the copy's
//! entries while loading, the tree's directories while rescanning. Once it
//! watches, there is no progress.

mod support;

use std::time::{Duration, Instant};

use support::run::Run;
use support::scratch::{FsKind, Scratch, scratch};
use weir_fs::{Phase, RootState, TrackerOptions};

const DIRS: usize = 200;
const FILES_PER_DIR: usize = 200;

fn opts(index: &std::path::Path) -> TrackerOptions {
    TrackerOptions {
        index: Some(index.to_path_buf()),
        ..TrackerOptions::default()
    }
}

fn make_tree(s: &Scratch) {
    for d in 0..DIRS {
        let dir = s.root().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).expect("mkdir");
        for f in 0..FILES_PER_DIR {
            std::fs::File::create(dir.join(format!("f{f:03}"))).expect("create");
        }
    }
}

fn restart_progress(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: a restart's progress");
    let log_dir = base.mkdir("log");
    let index = base.path().join("state/fs/index.redb");
    make_tree(&s);

    let first = Run::start(&s, &log_dir, opts(&index));
    let deadline = Instant::now() + Duration::from_secs(120);
    while first.tracker.roots()[0].state == RootState::Reading {
        assert!(
            Instant::now() < deadline,
            "{what}: the first read took 120 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    first.tracker.sync().expect("sync");
    let entries = first.tracker.roots()[0].entries;
    first.stop();
    std::fs::File::create(s.root().join("d007/while-down")).expect("create");
    std::fs::remove_file(s.root().join("d150/f010")).expect("unlink");

    let second = Run::start(&s, &log_dir, opts(&index));
    let mut seen: Vec<(Phase, u64, Option<u64>)> = Vec::new();
    loop {
        let r = second.tracker.roots().remove(0);
        if r.state != RootState::Reading {
            assert_eq!(r.progress, None, "{what}: progress once watching");
            break;
        }
        if let Some(p) = r.progress
            && seen.last() != Some(&(p.phase, p.done, p.total))
        {
            seen.push((p.phase, p.done, p.total));
        }
        assert!(Instant::now() < deadline, "{what}: still reading");
        std::thread::sleep(Duration::from_millis(1));
    }
    let order = [
        Phase::Loading,
        Phase::Replaying,
        Phase::Rescanning,
        Phase::Comparing,
    ];
    let at = |p: Phase| order.iter().position(|x| *x == p);
    assert!(
        seen.iter().any(|(p, ..)| *p == Phase::Loading),
        "{what}: the load from the copy not seen: {seen:?}"
    );
    for w in seen.windows(2) {
        let (a, b) = (at(w[0].0), at(w[1].0));
        assert!(
            a.is_some() && b.is_some() && a <= b,
            "{what}: phases out of order: {seen:?}"
        );
    }
    for (phase, done, total) in &seen {
        let total = total.unwrap_or_else(|| panic!("{what}: {phase:?} without a total"));
        assert!(done <= &total, "{what}: {phase:?} {done} of {total}");
        match phase {
            Phase::Loading => assert_eq!(total, entries, "{what}: the copy's entries"),
            Phase::Rescanning => assert_eq!(total, DIRS as u64 + 1, "{what}: the directories"),
            _ => {}
        }
    }
    let rs = second.records();
    assert!(
        rs.iter().any(|r| r.name == b"while-down"),
        "{what}: the change made while down was not reconciled"
    );
    second.stop();
}

support::private_ns_test!(
    restart_progress_on_tmpfs,
    inner_restart_progress_on_tmpfs,
    restart_progress,
    FsKind::Tmpfs
);
