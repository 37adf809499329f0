//! A move under fanotify: the kernel reports only the mount that moved, but
//! its submounts move with it. In a private mount namespace.

mod support;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_log::{Log, Options, RecordType};
use weir_mounts::record::{FLAG_COMPARE, mount_id};
use weir_mounts::{BackendChoice, Tracker, TrackerOptions};

use support::{in_private_namespace, sh, tmpfs};

fn dir_with_tmpfs(target: &Path) {
    std::fs::create_dir_all(target).unwrap();
    tmpfs(target);
}

/// `base/sub`, or `base` itself for an empty `sub` (`join("")` would add a
/// trailing slash, which no mount point has).
fn under(base: &Path, sub: &str) -> PathBuf {
    if sub.is_empty() {
        base.to_path_buf()
    } else {
        base.join(sub)
    }
}

fn id_at(t: &Tracker, p: &Path) -> Option<u64> {
    let point = p.as_os_str().as_bytes();
    t.mounts()
        .iter()
        .find(|m| *m.mount_point == *point)
        .map(|m| m.id)
}

/// Regression: after `mount --move`, the moved mount's submounts kept
/// their old mount points in the table until the next whole-table
/// comparison (20 ms later at best, up to `max_delay` in a storm), and
/// their MOVE records came from that comparison. Now the move event
/// re-reads the subtree at once.
#[test]
fn a_moved_trees_submounts_follow_it_from_the_event() {
    if !in_private_namespace("a_moved_trees_submounts_follow_it_from_the_event") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(d.path().join("log"), Options::default()).unwrap());
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    dir_with_tmpfs(&a);
    dir_with_tmpfs(&a.join("s1"));
    dir_with_tmpfs(&a.join("s1/s2"));
    std::fs::create_dir(&b).unwrap();
    let opts = TrackerOptions {
        backend: BackendChoice::Fanotify,
        // No comparison runs during the test: only the events can move
        // the submounts.
        quiet: Duration::from_secs(600),
        max_delay: Duration::from_secs(600),
        audit_interval: None,
        ..TrackerOptions::default()
    };
    let t = Tracker::start(Some(log.clone()), opts, None).expect("start tracker");
    let ids: Vec<u64> = ["", "s1", "s1/s2"]
        .iter()
        .map(|s| id_at(&t, &under(&a, s)).expect("mounted before the start"))
        .collect();
    let readings = t.stats().readings;

    sh(&format!("mount --move {} {}", a.display(), b.display()));
    let t0 = Instant::now();
    for (s, id) in ["", "s1", "s1/s2"].iter().zip(&ids) {
        while id_at(&t, &under(&b, s)) != Some(*id) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{} not followed to {}: {:?}",
                under(&a, s).display(),
                under(&b, s).display(),
                t.mounts()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert_eq!(t.stats().readings, readings, "a comparison ran");
    assert!(id_at(&t, &a.join("s1")).is_none());

    // One MOVE per mount of the tree, each from the event, each naming its
    // new mount point and its old one.
    log.sync().unwrap();
    let mut r = log.reader(1);
    let mut moves = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if rec.kind == RecordType::MOUNT_MOVE {
            moves.push(rec);
        }
    }
    assert_eq!(moves.len(), 3, "{moves:?}");
    for (s, id) in ["", "s1", "s1/s2"].iter().zip(&ids) {
        let m = moves
            .iter()
            .find(|r| mount_id(r) == Some(*id))
            .unwrap_or_else(|| panic!("no MOVE of {s:?}: {moves:?}"));
        assert_eq!(m.flags & FLAG_COMPARE, 0, "{m:?}");
        assert_eq!(m.name, under(&b, s).as_os_str().as_bytes());
        assert_eq!(m.field("from"), Some(under(&a, s).as_os_str().as_bytes()));
    }
    t.stop().unwrap();
}
