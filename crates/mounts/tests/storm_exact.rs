//! A storm of real mounts and unmounts, with no sync between them, under
//! each backend: afterwards the tracker's table equals a fresh reading of
//! the kernel's, and its log holds exactly one ATTACH per mount and then
//! one DETACH per unmount, and nothing else. The mount-storm benchmark
//! checks its storms with the same comparison (`weir_mounts::exact`). In a
//! private mount namespace.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;

use rustix::mount::{UnmountFlags, mount_bind, unmount};
use weir_log::{Log, Options, RecordType};
use weir_mounts::exact::{self, Tally};
use weir_mounts::{BackendChoice, Tracker, TrackerOptions};

use support::{in_private_namespace, tmpfs};

/// Mounts per storm: enough that events arrive faster than one read each.
const STORM: usize = 500;

/// Syncs the tracker, then asserts that its table is the kernel's; returns
/// the kernel's ids.
fn assert_table_is_the_kernels(t: &Tracker) -> BTreeSet<u64> {
    t.sync().expect("sync");
    let fresh = weir_mounts::source::read_sorted(t.backend()).expect("read the table");
    let diff = exact::table_diff(&t.mounts(), &fresh);
    assert!(diff.is_none(), "{}", diff.unwrap());
    exact::ids(&fresh)
}

fn storm_is_exact(backend: BackendChoice) {
    let d = tempfile::tempdir().unwrap();
    // The log outside the storm's tmpfs, which is unmounted at the end.
    let log = Arc::new(Log::open(d.path().join("log"), Options::default()).expect("open log"));
    let root = d.path().join("storm");
    std::fs::create_dir(&root).unwrap();
    tmpfs(&root);
    let src = root.join("src");
    std::fs::create_dir(&src).unwrap();
    let targets: Vec<_> = (0..STORM).map(|i| root.join(format!("t{i}"))).collect();
    for p in &targets {
        std::fs::create_dir(p).unwrap();
    }
    let opts = TrackerOptions {
        backend,
        audit_interval: None,
        ..TrackerOptions::default()
    };
    let t = Tracker::start(Some(log.clone()), opts, None).expect("start tracker");
    // Whatever the start logged stays out of the tally.
    t.sync().expect("sync");
    let before = exact::kernel_ids(t.backend()).expect("the kernel's ids");
    let mut reader = log.reader(log.last_index() + 1);
    let mut tally = Tally::default();

    for p in &targets {
        mount_bind(&src, p).expect("bind mount");
    }
    let after = assert_table_is_the_kernels(&t);
    let storm: BTreeSet<u64> = after.difference(&before).copied().collect();
    assert_eq!(storm.len(), STORM, "new ids in the kernel's table");
    tally.read(&mut reader).expect("read the log");
    let c = tally.check(RecordType::MOUNT_ATTACH, &storm);
    assert!(c.ok(), "{c}");

    for p in &targets {
        unmount(p, UnmountFlags::empty()).expect("unmount");
    }
    assert_table_is_the_kernels(&t);
    tally.read(&mut reader).expect("read the log");
    // ATTACH again, so that a late duplicate cannot slip through.
    for kind in [RecordType::MOUNT_DETACH, RecordType::MOUNT_ATTACH] {
        let c = tally.check(kind, &storm);
        assert!(c.ok(), "{c}");
    }
    t.stop().unwrap();
    unmount(&root, UnmountFlags::DETACH).expect("detach the tmpfs");
}

#[test]
fn a_storm_is_exact_on_fanotify() {
    if in_private_namespace("a_storm_is_exact_on_fanotify") {
        storm_is_exact(BackendChoice::Fanotify);
    }
}

#[test]
fn a_storm_is_exact_on_mountinfo() {
    if in_private_namespace("a_storm_is_exact_on_mountinfo") {
        storm_is_exact(BackendChoice::Mountinfo);
    }
}
