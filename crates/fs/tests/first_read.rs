//! A tree too big to read within the start's budget is read by the
//! tracker's thread after `Tracker::start` returns, and changes made while
//! it reads are logged exactly. On xfs and tmpfs:
//!
//! 1. a tracker on an empty root sees 60,000 files made in 300 directories
//!    and stops;
//! 2. with nothing watching, a few changes;
//! 3. a new tracker on the same log (`resume`) returns while its tree is
//!    still being read (`reading`); at once, and while it reads, files are
//!    made, removed and renamed, a directory with contents is made, and a
//!    subtree is removed;
//! 4. after `sync` the tree is read, the MARK `fs tree reconciled` is
//!    logged, and the replay of the whole log is the live tree: each
//!    change made while the thread read was either in its walk or logged
//!    after it, never both and never neither.
//!
//! Also a fresh start (`resume: false`) of the same big root: it returns
//! reading, shows its walk's progress growing, its status turns to
//! watching once read (with nothing else to wake the thread), and once
//! synced its tree holds as many entries as the live one.

mod support;

use std::path::PathBuf;
use std::sync::Arc;

use support::journal::{assert_replay_is_live, describe_all, records_from};
use support::scratch::{FsKind, Scratch, scratch};
use weir_fs::{Phase, RootState, Tracker, TrackerOptions};
use weir_log::{Log, Options, RecordType};

const DIRS: usize = 300;
const FILES_PER_DIR: usize = 200;

fn start(s: &Scratch, log: &Arc<Log>, resume: bool) -> Tracker {
    Tracker::start(
        Some(log.clone()),
        TrackerOptions {
            roots: vec![s.root().to_path_buf()],
            resume,
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{}: starting the tracker: {e}", s.kind()))
}

fn dir(s: &Scratch, d: usize) -> PathBuf {
    s.root().join(format!("d{d:03}"))
}

fn file(s: &Scratch, d: usize, f: usize) -> PathBuf {
    dir(s, d).join(format!("f{f:04}"))
}

fn make_tree(s: &Scratch) {
    for d in 0..DIRS {
        std::fs::create_dir(dir(s, d)).expect("mkdir");
        for f in 0..FILES_PER_DIR {
            std::fs::File::create(file(s, d, f)).expect("create");
        }
    }
}

/// Changes all over the tree, in the order the walk reads it and against
/// it, so that some fall before the walk reaches their directory and some
/// after.
fn churn(s: &Scratch, round: usize) {
    for k in 0..DIRS / 3 {
        let (a, b) = (k * 3, DIRS - 1 - k * 3);
        let f = round * 7 + k % 5;
        std::fs::File::create(dir(s, a).join(format!("new{round}-{k}"))).expect("create");
        let _ = std::fs::remove_file(file(s, b, f));
        let _ = std::fs::rename(
            file(s, a, f + 1),
            dir(s, b).join(format!("moved{round}-{k}")),
        );
    }
    let sub = s.root().join(format!("made{round}"));
    std::fs::create_dir_all(sub.join("inner")).expect("mkdir -p");
    std::fs::File::create(sub.join("inner/x")).expect("create");
    // Neither a `k * 3` nor a `DIRS - 1 - k * 3` directory.
    std::fs::remove_dir_all(dir(s, 1 + 3 * round)).expect("rm -r");
}

fn first_read_on(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: first read in the thread");
    let log_dir = base.mkdir("log");

    // 1. The tree, logged from an empty root.
    let log = Arc::new(Log::open(&log_dir, Options::default()).expect("open the log"));
    let first = start(&s, &log, true);
    assert!(
        first.roots()[0].state == RootState::Watching,
        "{what}: an empty root is read at once"
    );
    make_tree(&s);
    first.sync().expect("sync");
    first.stop().expect("stop");

    // 2. While nothing watches.
    std::fs::File::create(s.root().join("while-down")).expect("create");
    std::fs::remove_file(file(&s, 5, 5)).expect("unlink");

    // 3. Restarted: the thread reads, and the tree changes meanwhile.
    let from = log.last_index() + 1;
    let second = start(&s, &log, true);
    let status = &second.roots()[0];
    assert!(
        status.state == RootState::Reading,
        "{what}: {} entries were read within the start's budget; the test needs a bigger tree",
        DIRS * FILES_PER_DIR
    );
    for round in 0..3 {
        churn(&s, round);
    }
    second.sync().expect("sync");
    assert!(
        second.roots()[0].state == RootState::Watching,
        "{what}: still reading after a sync"
    );

    // 4. One reconciliation, then the changes; the replay is the tree.
    let rs = records_from(&log, from);
    let marks: Vec<&[u8]> = rs
        .iter()
        .filter(|r| r.kind == RecordType::MARK)
        .map(|r| &r.name[..])
        .collect();
    assert_eq!(
        marks,
        [&b"fs tree reconciled"[..]],
        "{what}:\n{}",
        describe_all(&rs[..rs.len().min(40)])
    );
    let reconciled = rs
        .iter()
        .find(|r| r.kind == RecordType::MARK)
        .and_then(|r| r.field("changes"))
        .and_then(|c| std::str::from_utf8(c).ok()?.parse::<u64>().ok())
        .expect("the MARK counts its changes");
    assert!(
        reconciled >= 2,
        "{what}: the changes made while down were not reconciled"
    );
    assert_replay_is_live(&log, s.root(), &what);
    second.stop().expect("stop");

    // A fresh start of the same big root reads in the thread too, and
    // its tree ends as big as the live one.
    let third = start(&s, &log, false);
    assert!(
        third.roots()[0].state == RootState::Reading,
        "{what}: a fresh start read at once"
    );
    // Its end shows without a sync or an event to wake the thread, and
    // meanwhile its progress: a walk, its entries so far growing, with no
    // total (the tree was never seen).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut walked = Vec::new();
    loop {
        let r = third.roots().remove(0);
        if r.state != RootState::Reading {
            assert_eq!(r.progress, None, "{what}: progress after the read");
            break;
        }
        if let Some(p) = r.progress {
            assert_eq!((p.phase, p.total), (Phase::Walking, None), "{what}: {p:?}");
            walked.push(p.done);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: still reading after 120 s, or its end not shown"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        walked.iter().any(|&d| d > 0) && walked.windows(2).all(|w| w[0] <= w[1]),
        "{what}: the walk's progress while reading: {walked:?}"
    );
    churn(&s, 3);
    third.sync().expect("sync");
    let live = weir_fs::walk::read_tree(s.root()).expect("walk").0;
    assert_eq!(
        third.roots()[0].entries,
        live.len() as u64,
        "{what}: after a fresh start"
    );
    third.stop().expect("stop");
}

support::private_ns_test!(
    first_read_on_tmpfs,
    inner_first_read_on_tmpfs,
    first_read_on,
    FsKind::Tmpfs
);
support::private_ns_test!(
    first_read_on_xfs,
    inner_first_read_on_xfs,
    first_read_on,
    FsKind::Xfs
);
