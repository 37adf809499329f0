//! The main test of the journal: a random workload of several processes on
//! each of ext4, xfs, btrfs (a subvolume that is not the top level) and
//! tmpfs, each on a loop device in a private mount namespace; then `sync`,
//! then the log's records replayed by id over the empty root must give the
//! live tree exactly: every name, its type, its file handle and, for a
//! non-directory, its link count.
//!
//! The replay is `weir_fs::replay`, the tree walk is the support's own
//! (`support::tree::snapshot`), and the ids are compared with
//! `name_to_handle_at` of each live path (`support::journal::compare`).

mod support;

use std::collections::BTreeMap;

use support::journal::{compare, open_log};
use support::scratch::{FsKind, scratch};
use weir_fs::{Tracker, TrackerOptions};

support::workload_child_test!();

fn exact_on(kind: FsKind, seed: u64, procs: usize, ops: usize) {
    let base = support::private_base().expect("the private base");
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let log = open_log(&base.mkdir(&format!("log-{kind}")));
    let tracker = Tracker::start(
        Some(log.clone()),
        TrackerOptions {
            roots: vec![s.root().to_path_buf()],
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{kind}: starting the tracker: {e}"));
    let report = support::workload::run(s.root(), seed, procs, ops);
    tracker.sync().expect("sync");
    let stats = tracker.stats();
    let roots = tracker.roots();
    tracker.stop().expect("stop");
    let problems = compare(&log, s.root());
    eprintln!(
        "{kind}: {} ops, {} events in {} reads, {} records, {} verified, {} overflows; mark {}",
        report.total(),
        stats.events,
        stats.reads,
        stats.records,
        roots[0].verified,
        stats.overflows,
        roots[0].mark
    );
    assert!(
        problems.is_empty(),
        "{kind}: the replay differs from the live tree ({} problems):\n{}",
        problems.len(),
        problems
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        report.missing().is_empty(),
        "{kind}: op kinds that never ran: {:?}",
        report.missing()
    );
    let _ = BTreeMap::<(), ()>::new();
}

macro_rules! exact_test {
    ($outer:ident, $inner:ident, $kind:expr) => {
        #[test]
        fn $outer() {
            support::run_in_private_ns(stringify!($inner));
        }

        #[test]
        #[ignore = "run by its outer test in a private mount namespace"]
        fn $inner() {
            support::assert_private_ns();
            for seed in [1, 2, 3] {
                exact_on($kind, seed, 4, 400);
            }
        }
    };
}

exact_test!(exact_on_ext4, inner_exact_on_ext4, FsKind::Ext4);
exact_test!(exact_on_xfs, inner_exact_on_xfs, FsKind::Xfs);
exact_test!(
    exact_on_btrfs_subvolume,
    inner_exact_on_btrfs_subvolume,
    FsKind::Btrfs
);
exact_test!(exact_on_tmpfs, inner_exact_on_tmpfs, FsKind::Tmpfs);
