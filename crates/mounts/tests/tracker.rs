//! The tracker against real mounts, in a private mount namespace: the
//! barrier, each kind of change, and the records in the log.

mod support;

use std::path::Path;
use std::sync::Arc;

use weir_log::{Log, LogRecord, Options, RecordType};
use weir_mounts::{BackendChoice, Mount, Tracker, TrackerOptions};

use support::{in_private_namespace, sh, tmpfs};

fn tracker(dir: &Path, backend: BackendChoice) -> (Tracker, Arc<Log>) {
    let log = Arc::new(Log::open(dir.join("log"), Options::default()).expect("open log"));
    let opts = TrackerOptions {
        backend,
        ..TrackerOptions::default()
    };
    let t = Tracker::start(Some(log.clone()), opts, None).expect("start tracker");
    (t, log)
}

fn records(log: &Log) -> Vec<LogRecord> {
    let mut r = log.reader(1);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().expect("read log") {
        out.push(rec);
    }
    out
}

fn at<'a>(mounts: &'a [Mount], p: &Path) -> Option<&'a Mount> {
    use std::os::unix::ffi::OsStrExt;
    mounts
        .iter()
        .rev()
        .find(|m| &*m.mount_point == p.as_os_str().as_bytes())
}

fn id_of(r: &LogRecord) -> u64 {
    weir_mounts::record::mount_id(r).expect("8-byte target")
}

/// The barrier: 1000 rounds of (mount, sync, query) with the
/// mountinfo backend under its budget; the mount is always there. Every
/// tenth round also unmounts, and the unmount must be gone at once too.
#[test]
fn barrier_holds_for_1000_rounds_on_mountinfo() {
    if !in_private_namespace("barrier_holds_for_1000_rounds_on_mountinfo") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (t, log) = tracker(d.path(), BackendChoice::Mountinfo);
    let base = d.path().join("m");
    std::fs::create_dir(&base).unwrap();
    tmpfs(&base);
    let mut mounted = Vec::new();
    for i in 0..1000 {
        let p = base.join(format!("d{i}"));
        std::fs::create_dir(&p).unwrap();
        tmpfs(&p);
        t.sync().unwrap();
        assert!(
            at(&t.mounts(), &p).is_some(),
            "round {i}: {p:?} missing after sync"
        );
        mounted.push(p);
        if i % 10 == 9 {
            let gone = mounted.remove(0);
            rustix::mount::unmount(&gone, rustix::mount::UnmountFlags::empty()).unwrap();
            t.sync().unwrap();
            assert!(
                at(&t.mounts(), &gone).is_none(),
                "round {i}: {gone:?} still there"
            );
        }
    }
    let recs = records(&log);
    let attaches = recs
        .iter()
        .filter(|r| r.kind == RecordType::MOUNT_ATTACH)
        .count();
    let detaches = recs
        .iter()
        .filter(|r| r.kind == RecordType::MOUNT_DETACH)
        .count();
    assert_eq!((attaches, detaches), (1001, 100));
    t.stop().unwrap();
}

/// The same barrier on fanotify, fewer rounds: the events are applied one
/// by one and the comparison of `sync` must not duplicate them.
#[test]
fn barrier_holds_on_fanotify_without_duplicate_records() {
    if !in_private_namespace("barrier_holds_on_fanotify_without_duplicate_records") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (t, log) = tracker(d.path(), BackendChoice::Fanotify);
    let mut ids = Vec::new();
    for i in 0..200 {
        let p = d.path().join(format!("d{i}"));
        std::fs::create_dir(&p).unwrap();
        tmpfs(&p);
        t.sync().unwrap();
        let m = at(&t.mounts(), &p)
            .cloned()
            .expect("mount in table after sync");
        assert_eq!(m.id, weir_sys::statx::mount_id_unique(&p).unwrap());
        ids.push(m.id);
    }
    let recs = records(&log);
    for id in ids {
        let n = recs
            .iter()
            .filter(|r| r.kind == RecordType::MOUNT_ATTACH && id_of(r) == id)
            .count();
        assert_eq!(n, 1, "ATTACH records for mount {id}");
    }
    let s = t.stats();
    assert!(s.events >= 200, "{s:?}");
    t.stop().unwrap();
}

/// Each change seen correctly: remount read-only,
/// make-shared, a move, and a lazy umount of a tree of 100 mounts.
fn each_change_is_seen(backend: BackendChoice) {
    let d = tempfile::tempdir().unwrap();
    let (t, log) = tracker(d.path(), backend);
    let a = d.path().join("a");
    let b = d.path().join("b");
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    tmpfs(&a);
    t.sync().unwrap();
    let id = at(&t.mounts(), &a).expect("attached").id;

    sh(&format!("mount -o remount,ro {}", a.display()));
    t.sync().unwrap();
    let m = at(&t.mounts(), &a).cloned().unwrap();
    assert!(m.flags.contains(weir_mounts::MountFlags::RDONLY), "{m:?}");
    assert!(
        m.super_flags.contains(weir_mounts::SuperFlags::RDONLY),
        "{m:?}"
    );

    sh(&format!("mount --make-shared {}", a.display()));
    t.sync().unwrap();
    let m = at(&t.mounts(), &a).cloned().unwrap();
    assert!(m.propagation.shared.is_some(), "{m:?}");

    sh(&format!("mount --make-private {}", a.display()));
    sh(&format!("mount --move {} {}", a.display(), b.display()));
    t.sync().unwrap();
    let ms = t.mounts();
    assert!(at(&ms, &a).is_none());
    assert_eq!(at(&ms, &b).expect("moved").id, id);

    // A tree of 100 mounts: the root, 9 children, 90 grandchildren.
    let tree = d.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    tmpfs(&tree);
    for i in 0..9 {
        let c = tree.join(format!("c{i}"));
        std::fs::create_dir(&c).unwrap();
        tmpfs(&c);
        for j in 0..10 {
            let g = c.join(format!("g{j}"));
            std::fs::create_dir(&g).unwrap();
            tmpfs(&g);
        }
    }
    t.sync().unwrap();
    let before = t.mounts();
    let tree_prefix = {
        use std::os::unix::ffi::OsStrExt;
        tree.as_os_str().as_bytes().to_vec()
    };
    let in_tree: Vec<u64> = before
        .iter()
        .filter(|m| m.mount_point.starts_with(&tree_prefix))
        .map(|m| m.id)
        .collect();
    assert_eq!(in_tree.len(), 100);
    rustix::mount::unmount(&tree, rustix::mount::UnmountFlags::DETACH).unwrap();
    t.sync().unwrap();
    let after = t.mounts();
    assert!(after.iter().all(|m| !in_tree.contains(&m.id)));

    let recs = records(&log);
    let of = |kind: RecordType, id: u64| {
        recs.iter()
            .filter(|r| r.kind == kind && id_of(r) == id)
            .collect::<Vec<_>>()
    };
    let changes = of(RecordType::MOUNT_CHANGE, id);
    let changed = |what: &str| {
        changes.iter().any(|r| {
            r.field("changed")
                .is_some_and(|c| c.split(|&b| b == b',').any(|w| w == what.as_bytes()))
        })
    };
    assert!(changed("options"), "no CHANGE of options for the remount");
    assert!(
        changed("super"),
        "no CHANGE of super options for the remount"
    );
    assert!(changed("propagation"), "no CHANGE of propagation");
    let moves = of(RecordType::MOUNT_MOVE, id);
    assert_eq!(moves.len(), 1, "MOVE records");
    {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(moves[0].name, b.as_os_str().as_bytes());
        assert_eq!(moves[0].field("from"), Some(a.as_os_str().as_bytes()));
    }
    for tid in &in_tree {
        assert_eq!(
            of(RecordType::MOUNT_ATTACH, *tid).len(),
            1,
            "ATTACH of {tid}"
        );
        assert_eq!(
            of(RecordType::MOUNT_DETACH, *tid).len(),
            1,
            "DETACH of {tid}"
        );
    }
    t.stop().unwrap();
}

#[test]
fn each_change_is_seen_on_fanotify() {
    if in_private_namespace("each_change_is_seen_on_fanotify") {
        each_change_is_seen(BackendChoice::Fanotify);
    }
}

#[test]
fn each_change_is_seen_on_mountinfo() {
    if in_private_namespace("each_change_is_seen_on_mountinfo") {
        each_change_is_seen(BackendChoice::Mountinfo);
    }
}

/// The table a tracker keeps equals a fresh reading of the kernel's, for
/// each backend, after a mixed burst of changes without any sync between.
fn table_matches_kernel(backend: BackendChoice) {
    let d = tempfile::tempdir().unwrap();
    let (t, _log) = tracker(d.path(), backend);
    let src = d.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..300 {
        let p = d.path().join(format!("b{i}"));
        std::fs::create_dir(&p).unwrap();
        rustix::mount::mount_bind(&src, &p).unwrap();
        if i % 3 == 0 {
            rustix::mount::unmount(&p, rustix::mount::UnmountFlags::empty()).unwrap();
        }
    }
    t.sync().unwrap();
    let fresh = weir_mounts::source::read_sorted(t.backend()).unwrap();
    assert_eq!(t.mounts(), fresh);
    t.stop().unwrap();
}

#[test]
fn table_matches_kernel_on_fanotify() {
    if in_private_namespace("table_matches_kernel_on_fanotify") {
        table_matches_kernel(BackendChoice::Fanotify);
    }
}

#[test]
fn table_matches_kernel_on_mountinfo() {
    if in_private_namespace("table_matches_kernel_on_mountinfo") {
        table_matches_kernel(BackendChoice::Mountinfo);
    }
}

/// Regression: when several `sync()` calls were served by one reading, only
/// the first got `Ok`; the others got `SyncFailed` although nothing failed.
/// Needs no privilege: it only reads the table.
#[test]
fn concurrent_syncs_all_succeed() {
    let opts = TrackerOptions {
        backend: BackendChoice::Mountinfo,
        ..TrackerOptions::default()
    };
    let t = Arc::new(Tracker::start(None, opts, None).expect("start tracker"));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || (0..50).all(|_| t.sync().is_ok()))
        })
        .collect();
    for th in threads {
        assert!(th.join().unwrap(), "a sync failed");
    }
    assert!(!t.is_empty());
}
