//! `weir fs watch` under the two failures the journal must survive, on a
//! random multi-process workload: the watcher stopped (SIGSTOP) long
//! enough for the kernel's queue to overflow, and the watcher killed
//! (SIGKILL) twenty times during a storm, each time started again. After
//! either, the log's records replayed over the empty root give the live
//! tree exactly.
//!
//! The scratch filesystems, the workload and the comparison are weir-fs's
//! own test support, shared here by path. Needs root, unshare and
//! mkfs.ext4; skipped (with a message) otherwise.

#[path = "support/fs_watcher.rs"]
mod fs_watcher;
#[path = "../../fs/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fs_watcher::Watcher;
use support::journal::compare;
use support::scratch::{FsKind, scratch};

support::workload_child_test!();

fn open_log(state: &Path) -> weir_log::Log {
    weir_log::Log::open(state.join("log"), weir_log::Options::default()).expect("open the log")
}

fn count_marks(log: &weir_log::Log, name: &[u8]) -> usize {
    support::journal::records_from(log, 1)
        .iter()
        .filter(|r| r.kind == weir_log::RecordType::MARK && r.name == name)
        .count()
}

#[test]
fn a_stopped_watcher_overflows_and_recovers() {
    support::run_in_private_ns("inner_a_stopped_watcher_overflows_and_recovers");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_a_stopped_watcher_overflows_and_recovers() {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(FsKind::Ext4, base.path()) else {
        return;
    };
    let state = base.mkdir("state");
    // A small queue, read by fanotify_init only: the watcher's group gets
    // it, and the host's value comes back at once.
    let w = {
        let _q = support::sysctl::Sysctl::set("/proc/sys/fs/fanotify/max_queued_events", "512");
        Watcher::start(&state, s.root())
    };
    w.signal(rustix::process::Signal::STOP);
    let report = support::workload::run(s.root(), 11, 4, 1500);
    w.signal(rustix::process::Signal::CONT);
    w.stop();
    let log = open_log(&state);
    assert!(
        count_marks(&log, b"fs events lost: tree compared") >= 1,
        "the queue of 512 events did not overflow under {} operations",
        report.total()
    );
    let problems = compare(&log, s.root());
    assert!(
        problems.is_empty(),
        "after an overflow:\n{}",
        problems.join("\n")
    );
}

#[test]
fn twenty_kills_during_a_storm_lose_nothing() {
    support::run_in_private_ns("inner_twenty_kills_during_a_storm_lose_nothing");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_twenty_kills_during_a_storm_lose_nothing() {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(FsKind::Ext4, base.path()) else {
        return;
    };
    let state = base.mkdir("state");
    let root = s.root().to_path_buf();
    // The comparison below replays the log from the root's empty start,
    // but the persistent copy lets retention take what it covers (each
    // start after a kill begins a segment, and the floor keeps only the
    // newest 256 MiB of them): a consumer of the test's own, never
    // cleared, keeps the whole history.
    let log = open_log(&state);
    log.register("test-history", weir_log::TypeMask::all())
        .expect("register the test's consumer");
    log.close().expect("close the log");
    let mut w = Watcher::start(&state, &root);
    // The storm: rounds of the workload until the kills are done.
    let done = Arc::new(AtomicBool::new(false));
    let storm = {
        let (done, root) = (done.clone(), root.clone());
        std::thread::spawn(move || {
            let mut seed = 100;
            while !done.load(Ordering::Relaxed) {
                support::workload::run(&root, seed, 3, 400);
                seed += 1;
            }
            seed - 100
        })
    };
    let mut rng = support::rng::Rng::new(7);
    // Every other restart is killed as soon as it is ready, which may be
    // before its tree is read and its reconciliation logged: the next
    // start compares with the same view of the log then.
    let mut read = 0;
    for i in 0..20 {
        std::thread::sleep(Duration::from_millis(20 + rng.below(60) as u64));
        w.kill();
        let wait_read = i % 2 == 0 || i == 19;
        w = Watcher::start_with(&state, &root, &[], wait_read);
        read += usize::from(wait_read);
    }
    done.store(true, Ordering::Relaxed);
    let rounds = storm.join().expect("the storm");
    w.stop();
    let log = open_log(&state);
    let marks: Vec<String> = support::journal::records_from(&log, 1)
        .iter()
        .filter(|r| r.kind == weir_log::RecordType::MARK)
        .map(support::journal::describe)
        .collect();
    let reconciled = count_marks(&log, b"fs tree reconciled");
    assert!(
        (read..=20).contains(&reconciled),
        "a reconciliation per restart whose tree was read ({read}), at most one per restart; the MARKs:\n{}",
        marks.join("\n")
    );
    assert!(rounds >= 1);
    let problems = compare(&log, &root);
    assert!(
        problems.is_empty(),
        "after 20 kills:\n{}",
        problems.join("\n")
    );
}
