//! The main test of the journal: a random workload of several processes on
//! each of ext4, xfs, btrfs (a subvolume that is not the top level) and
//! tmpfs, each on a loop device in a private mount namespace; then `sync`,
//! then the log's records replayed by id over the empty root must give the
//! live tree exactly: every name, its type, its file handle and, for a
//! non-directory, its link count.
//!
//! The replay is `weir_fs::replay`, the tree walk is the support's own
//! (`support::tree::snapshot`), and the ids are compared with
//! `name_to_handle_at` of each live path.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::path::Path;
use std::sync::Arc;

use support::scratch::{FsKind, scratch};
use support::tree::{Kind as LiveKind, show, snapshot};
use weir_fs::{Kind, Tracker, TrackerOptions};
use weir_log::{Log, Options};
use weir_sys::fanotify::fid::name_to_handle_at;

support::workload_child_test!();

fn kind(k: LiveKind) -> Kind {
    match k {
        LiveKind::File => Kind::File,
        LiveKind::Dir => Kind::Dir,
        LiveKind::Symlink => Kind::Symlink,
        LiveKind::Fifo => Kind::Fifo,
        LiveKind::Socket => Kind::Socket,
        LiveKind::Char => Kind::Char,
        LiveKind::Block => Kind::Block,
    }
}

/// Compares the log's view of `root` with the live tree; returns the
/// differences, one line each.
pub(crate) fn compare(log: &Log, root: &Path) -> Vec<String> {
    let view = weir_fs::replay::view(log, root, None)
        .expect("reading the log")
        .expect("the log describes the root from an empty start");
    let replayed = view.tree.listing();
    let live = snapshot(root);
    let mut problems = Vec::new();
    let mut links: HashMap<&weir_fs::ObjectId, u64> = HashMap::new();
    for e in replayed.values() {
        *links.entry(&e.id).or_default() += 1;
    }
    for (path, node) in &live {
        let Some(e) = replayed.get(path) else {
            problems.push(format!(
                "missing from the replay: {} ({:?})",
                show(path),
                node.kind
            ));
            continue;
        };
        if e.kind != kind(node.kind) {
            problems.push(format!(
                "{}: replay says {:?}, live is {:?}",
                show(path),
                e.kind,
                node.kind
            ));
        }
        let mut full = root.as_os_str().as_encoded_bytes().to_vec();
        full.push(b'/');
        full.extend_from_slice(path);
        let c = CString::new(full).expect("no NUL in a path");
        match name_to_handle_at(rustix::fs::CWD, &c, 0) {
            Ok((h, _)) => {
                if e.id.handle() != h {
                    problems.push(format!(
                        "{}: replay id {:?}, live handle {:?}",
                        show(path),
                        e.id,
                        h
                    ));
                }
            }
            Err(err) => problems.push(format!("{}: name_to_handle_at: {err}", show(path))),
        }
        if node.kind != LiveKind::Dir && links.get(&e.id).copied() != Some(node.nlink) {
            problems.push(format!(
                "{}: replay has {:?} links, live nlink {}",
                show(path),
                links.get(&e.id),
                node.nlink
            ));
        }
    }
    for path in replayed.keys() {
        if !live.contains_key(path) {
            problems.push(format!("in the replay only: {}", show(path)));
        }
    }
    problems
}

fn open_log(dir: &Path) -> Arc<Log> {
    Arc::new(Log::open(dir, Options::default()).expect("open the log"))
}

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
