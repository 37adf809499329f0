//! Restart reconciliation against real mounts, in a private mount
//! namespace: a tracker's checkpoint, changes while no tracker runs, and a
//! new tracker started from the checkpoint. Every change must be logged
//! exactly once across the whole log, for both backends.

mod support;

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use weir_log::{FLAG_RECONCILED, Log, LogRecord, Options, RecordType};
use weir_mounts::record::FLAG_COMPARE;
use weir_mounts::{BackendChoice, Previous, Tracker, TrackerOptions};

use support::{in_private_namespace, sh};

fn open_log(dir: &Path) -> Arc<Log> {
    Arc::new(Log::open(dir.join("log"), Options::default()).expect("open log"))
}

fn start(log: &Arc<Log>, backend: BackendChoice, previous: Option<Previous>) -> Tracker {
    let opts = TrackerOptions {
        backend,
        previous,
        ..TrackerOptions::default()
    };
    Tracker::start(Some(log.clone()), opts, None).expect("start tracker")
}

/// Stops the tracker and closes its log, as a daemon's exit does.
fn stop(t: Tracker, log: Arc<Log>) {
    t.stop().expect("stop tracker");
    Arc::try_unwrap(log)
        .expect("the tracker let go of the log")
        .close()
        .expect("close log");
}

fn records(log: &Log, from: u64) -> Vec<LogRecord> {
    log.sync().expect("sync log");
    log.reader(from).map(|r| r.expect("read log")).collect()
}

fn bytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

fn mkdir(p: &Path) -> &Path {
    std::fs::create_dir_all(p).expect("mkdir");
    p
}

fn tmpfs(target: &Path) {
    rustix::mount::mount(
        "weirtest",
        mkdir(target),
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        None,
    )
    .expect("mount tmpfs");
}

fn bind(src: &Path, target: &Path) {
    rustix::mount::mount_bind(src, mkdir(target)).expect("bind mount");
}

fn umount(target: &Path) {
    rustix::mount::unmount(target, rustix::mount::UnmountFlags::empty()).expect("umount");
}

fn remount_ro(target: &Path) {
    sh(&format!("mount -o remount,ro {}", target.display()));
}

/// How many records of `kind` name `point`, among those `flags` selects.
fn count(recs: &[LogRecord], kind: RecordType, point: &Path, reconciled: bool) -> usize {
    recs.iter()
        .filter(|r| r.kind == kind && r.name == bytes(point))
        .filter(|r| (r.flags & FLAG_RECONCILED != 0) == reconciled)
        .count()
}

fn assert_table_is_the_kernels(t: &Tracker) {
    t.sync().expect("sync");
    let fresh = weir_mounts::source::read_sorted(t.backend()).expect("read the table");
    assert_eq!(t.mounts(), fresh);
}

/// A restart: a checkpoint, then 50 mounts, 5 unmounts and a
/// remount while no tracker runs. The new tracker logs exactly one
/// reconciled ATTACH per new mount, one DETACH per unmount and one CHANGE
/// for the remount, and nothing else.
fn downtime_is_reconciled(backend: BackendChoice) {
    let d = tempfile::tempdir().unwrap();
    let old: Vec<PathBuf> = (0..10).map(|i| d.path().join(format!("old{i}"))).collect();
    let log = open_log(d.path());
    let t = start(&log, backend, None);
    old.iter().for_each(|p| tmpfs(p));
    t.sync().unwrap();
    let cp = t.checkpoint();
    assert_eq!(cp.log_index, log.last_index(), "the checkpoint's index");
    for p in &old {
        assert!(cp.mounts.iter().any(|m| *m.mount_point == *bytes(p)));
    }
    stop(t, log);

    // While down.
    let src = mkdir(&d.path().join("src")).to_path_buf();
    let mut new = Vec::new();
    for i in 0..50 {
        let p = d.path().join(format!("new{i}"));
        if i % 2 == 0 {
            tmpfs(&p);
        } else {
            bind(&src, &p);
        }
        new.push(p);
    }
    old[..5].iter().for_each(|p| umount(p));
    remount_ro(&old[5]);

    let log = open_log(d.path());
    let since = cp.log_index;
    let t = start(&log, backend, Some(cp));
    let recs = records(&log, since + 1);
    let reconciled: Vec<&LogRecord> = recs
        .iter()
        .filter(|r| r.flags & FLAG_RECONCILED != 0)
        .collect();
    assert!(
        reconciled
            .iter()
            .all(|r| r.flags & FLAG_COMPARE == FLAG_COMPARE),
        "reconciled records are COMPARE records too"
    );
    for p in &new {
        assert_eq!(
            count(&recs, RecordType::MOUNT_ATTACH, p, true),
            1,
            "ATTACH {p:?}"
        );
    }
    for p in &old[..5] {
        assert_eq!(
            count(&recs, RecordType::MOUNT_DETACH, p, true),
            1,
            "DETACH {p:?}"
        );
    }
    assert_eq!(count(&recs, RecordType::MOUNT_CHANGE, &old[5], true), 1);
    let change = reconciled
        .iter()
        .find(|r| r.kind == RecordType::MOUNT_CHANGE)
        .unwrap();
    let changed = change.field("changed").unwrap();
    assert!(changed.starts_with(b"options"), "{change:?}");
    assert_eq!(change.field("options").map(|o| &o[..2]), Some(&b"ro"[..]));
    assert_eq!(reconciled.len(), 56, "{reconciled:#?}");

    // Replay order: detaches, then the change, then attaches.
    let kinds: Vec<RecordType> = reconciled.iter().map(|r| r.kind).collect();
    let mut sorted = kinds.clone();
    sorted.sort_by_key(|k| match *k {
        RecordType::MOUNT_DETACH => 0,
        RecordType::MOUNT_CHANGE => 1,
        _ => 2,
    });
    assert_eq!(kinds, sorted);

    // The reconciled ATTACHes carry the ids the new tracker has.
    let ids: BTreeMap<Vec<u8>, u64> = t
        .mounts()
        .into_iter()
        .map(|m| (m.mount_point.to_vec(), m.id))
        .collect();
    for r in reconciled
        .iter()
        .filter(|r| r.kind == RecordType::MOUNT_ATTACH)
    {
        let id = weir_mounts::record::mount_id(r).unwrap();
        assert_eq!(ids.get(&r.name), Some(&id), "{r:?}");
    }

    let mark = recs
        .iter()
        .find(|r| r.kind == RecordType::MARK && r.name == b"mount table reconciled")
        .expect("the MARK");
    assert!(mark.index > reconciled.last().unwrap().index);
    assert_eq!(mark.field("changes"), Some(&b"56"[..]));
    assert_eq!(mark.field("since"), Some(since.to_string().as_bytes()));
    assert_eq!(mark.field("ids"), Some(&b"compared"[..]));
    assert!(
        !recs
            .iter()
            .any(|r| r.kind == RecordType::MARK && r.name == b"mount table read")
    );
    let s = t.stats();
    assert_eq!(s.reconciled, 56, "{s:?}");
    assert_eq!(t.checkpoint().log_index, mark.index);
    assert_table_is_the_kernels(&t);
    stop(t, log);
}

#[test]
fn downtime_is_reconciled_on_fanotify() {
    if in_private_namespace("downtime_is_reconciled_on_fanotify") {
        downtime_is_reconciled(BackendChoice::Fanotify);
    }
}

#[test]
fn downtime_is_reconciled_on_mountinfo() {
    if in_private_namespace("downtime_is_reconciled_on_mountinfo") {
        downtime_is_reconciled(BackendChoice::Mountinfo);
    }
}

/// The crash window: the tracker logs changes after the checkpoint and
/// stops without a new one. Restarted from the old checkpoint, it must log
/// neither those changes again nor miss any made while it was down.
fn the_crash_tail_is_not_logged_twice(backend: BackendChoice) {
    let d = tempfile::tempdir().unwrap();
    let p = |name: &str| d.path().join(name);
    let a: Vec<PathBuf> = (0..10).map(|i| p(&format!("a{i}"))).collect();
    let tail: Vec<PathBuf> = (0..10).map(|i| p(&format!("t{i}"))).collect();
    let down: Vec<PathBuf> = (0..10).map(|i| p(&format!("w{i}"))).collect();
    let (x, moved) = (p("x"), p("moved"));

    let log = open_log(d.path());
    let t = start(&log, backend, None);
    a.iter().for_each(|m| tmpfs(m));
    t.sync().unwrap();
    let cp = t.checkpoint();

    // Logged after the checkpoint.
    tail.iter().for_each(|m| tmpfs(m));
    tmpfs(&x);
    t.sync().unwrap();
    umount(&x);
    umount(&a[0]);
    umount(&a[1]);
    remount_ro(&a[2]);
    mkdir(&moved);
    sh(&format!(
        "mount --move {} {}",
        a[3].display(),
        moved.display()
    ));
    t.sync().unwrap();
    // The crash: no checkpoint after these.
    stop(t, log);

    // While down.
    down.iter().for_each(|m| tmpfs(m));
    umount(&tail[0]);
    umount(&a[4]);
    remount_ro(&tail[1]);
    remount_ro(&a[5]);

    let log = open_log(d.path());
    let t = start(&log, backend, Some(cp));
    assert_table_is_the_kernels(&t);
    let recs = records(&log, 1);
    use RecordType as R;
    let once = |kind: R, m: &Path, reconciled: bool| {
        assert_eq!(
            count(&recs, kind, m, reconciled),
            1,
            "{kind} {m:?} reconciled={reconciled}"
        );
        assert_eq!(
            count(&recs, kind, m, !reconciled),
            0,
            "{kind} {m:?} reconciled={}",
            !reconciled
        );
    };
    for m in a.iter().chain(&tail).chain([&x]) {
        once(R::MOUNT_ATTACH, m, false);
    }
    for m in &down {
        once(R::MOUNT_ATTACH, m, true);
    }
    for m in [&x, &a[0], &a[1]] {
        once(R::MOUNT_DETACH, m, false);
    }
    for m in [&tail[0], &a[4]] {
        once(R::MOUNT_DETACH, m, true);
    }
    once(R::MOUNT_MOVE, &moved, false);
    for m in [&tail[1], &a[5]] {
        once(R::MOUNT_CHANGE, m, true);
    }
    // A remount may be read half-done and logged as two CHANGEs; only its
    // repetition by the restart matters here.
    assert!(count(&recs, R::MOUNT_CHANGE, &a[2], false) >= 1);
    assert_eq!(count(&recs, R::MOUNT_CHANGE, &a[2], true), 0);
    let reconciled = recs
        .iter()
        .filter(|r| r.flags & FLAG_RECONCILED != 0)
        .count();
    assert_eq!(reconciled, 14);
    assert_eq!(t.stats().reconciled, 14);
    let mark = recs
        .iter()
        .find(|r| r.name == b"mount table reconciled")
        .expect("the MARK");
    assert_ne!(mark.field("replayed"), Some(&b"0"[..]));
    stop(t, log);
}

#[test]
fn the_crash_tail_is_not_logged_twice_on_fanotify() {
    if in_private_namespace("the_crash_tail_is_not_logged_twice_on_fanotify") {
        the_crash_tail_is_not_logged_twice(BackendChoice::Fanotify);
    }
}

#[test]
fn the_crash_tail_is_not_logged_twice_on_mountinfo() {
    if in_private_namespace("the_crash_tail_is_not_logged_twice_on_mountinfo") {
        the_crash_tail_is_not_logged_twice(BackendChoice::Mountinfo);
    }
}

/// `generation` moves with every change and only then; `checkpoint` is the
/// table and the last record's index; a restart with nothing changed logs
/// nothing but its MARK.
fn generation_and_checkpoint_follow_the_table(backend: BackendChoice) {
    let d = tempfile::tempdir().unwrap();
    let log = open_log(d.path());
    let t = start(&log, backend, None);
    let g0 = t.generation();
    assert!(g0 > 0, "the first reading is a generation");
    t.sync().unwrap();
    assert_eq!(t.generation(), g0, "a sync that changed nothing");
    tmpfs(&d.path().join("g"));
    t.sync().unwrap();
    let g1 = t.generation();
    assert!(g1 > g0);
    let cp = t.checkpoint();
    assert_eq!(cp.mounts, t.mounts());
    assert_eq!(cp.log_index, log.last_index());
    stop(t, log);

    let log = open_log(d.path());
    let since = cp.log_index;
    let t = start(&log, backend, Some(cp));
    assert_eq!(t.stats().reconciled, 0);
    let recs = records(&log, since + 1);
    assert_eq!(recs.len(), 1, "{recs:#?}");
    assert_eq!(recs[0].name, b"mount table reconciled");
    assert_eq!(recs[0].field("changes"), Some(&b"0"[..]));
    stop(t, log);
}

#[test]
fn generation_and_checkpoint_follow_the_table_on_fanotify() {
    if in_private_namespace("generation_and_checkpoint_follow_the_table_on_fanotify") {
        generation_and_checkpoint_follow_the_table(BackendChoice::Fanotify);
    }
}

#[test]
fn generation_and_checkpoint_follow_the_table_on_mountinfo() {
    if in_private_namespace("generation_and_checkpoint_follow_the_table_on_mountinfo") {
        generation_and_checkpoint_follow_the_table(BackendChoice::Mountinfo);
    }
}
