//! The restart comparison against a log on `MemFs`: a checkpoint at index N,
//! records after N (the crash tail), and a "live" reading.

use std::sync::Arc;

use serde::Deserialize;
use serde::de::IntoDeserializer;
use weir_log::mem::MemFs;
use weir_log::{Log, Options, Record, RecordType};

use super::*;
use crate::model::{MountFlags, Propagation, SuperFlags};
use crate::record::{self, FLAG_COMPARE};

fn mem_log(dir: &std::path::Path) -> Log {
    Log::open(dir, Options::default().fs(Arc::new(MemFs::new()))).expect("open log")
}

/// A tmpfs mount as the fanotify backend reads it: a unique id above 2^31,
/// and a small old id.
fn fan(n: u64, point: &str) -> Mount {
    let mut m = info(n, point);
    m.id = (1 << 31) + n;
    m.parent_id = 1 << 31;
    m
}

/// The same as the mountinfo backend reads it: `id == old_id`.
fn info(n: u64, point: &str) -> Mount {
    Mount {
        id: n,
        parent_id: 1,
        old_id: n as u32,
        old_parent_id: 1,
        major: 0,
        minor: 40 + n as u32,
        root: b"/".as_slice().into(),
        mount_point: point.as_bytes().into(),
        fstype: b"tmpfs".as_slice().into(),
        subtype: None,
        source: b"tmpfs".as_slice().into(),
        flags: MountFlags::RELATIME,
        super_flags: SuperFlags::default(),
        fs_options: b"size=1024k".as_slice().into(),
        propagation: Propagation::default(),
    }
}

fn log_change(log: &Log, kind: ChangeKind, seen: Seen) {
    let _ = record::append(log, &Change { kind, seen }).expect("append");
}

fn ro(m: &Mount) -> Mount {
    let mut m = m.clone();
    m.flags.insert(MountFlags::RDONLY);
    m.super_flags.insert(SuperFlags::RDONLY);
    m
}

fn moved(m: &Mount, point: &str) -> Mount {
    let mut m = m.clone();
    m.mount_point = point.as_bytes().into();
    m
}

/// `KIND id` per change, the id relative to the fanotify offset.
fn names(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .map(|c| format!("{} {}", c.name(), c.id() & !(1 << 31)))
        .collect()
}

/// Waits until the log's readers see everything appended.
fn settle(log: &Log) {
    log.sync().expect("sync");
}

/// The crash window: the checkpoint is older than the log. Every change
/// after it is already logged and must not be logged again; only what
/// happened after the last record is.
#[test]
fn the_tail_after_the_checkpoint_is_not_logged_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = mem_log(dir.path());
    let (a, b, c, d) = (fan(1, "/a"), fan(2, "/b"), fan(3, "/c"), fan(4, "/d"));
    let _ = log
        .append(&Record::new(RecordType::MARK).name(b"mount table read"))
        .unwrap();
    for m in [&a, &b, &c, &d] {
        log_change(&log, ChangeKind::Attach(m.clone()), Seen::Event);
    }
    settle(&log);
    let prev = Previous {
        mounts: vec![a.clone(), b.clone(), c.clone(), d.clone()],
        log_index: log.last_index(),
    };

    // The tail, as the stopped tracker logged it.
    let e = fan(5, "/e");
    let f = fan(6, "/f");
    log_change(&log, ChangeKind::Attach(e.clone()), Seen::Event);
    log_change(&log, ChangeKind::Detach(b.clone()), Seen::Event);
    log_change(
        &log,
        ChangeKind::Change {
            old: c.clone(),
            new: ro(&c),
        },
        Seen::Compare,
    );
    log_change(
        &log,
        ChangeKind::Move {
            old: d.clone(),
            new: moved(&d, "/d2"),
        },
        Seen::Event,
    );
    log_change(&log, ChangeKind::Attach(f.clone()), Seen::Event);
    log_change(&log, ChangeKind::Detach(f), Seen::Event);
    let gone = |n: u64| (1u64 << 31) + n;
    log_change(&log, ChangeKind::AttachGone { id: gone(7) }, Seen::Event);
    log_change(&log, ChangeKind::DetachGone { id: gone(7) }, Seen::Event);
    // The stop came between this one's attach and its detach.
    log_change(&log, ChangeKind::AttachGone { id: gone(8) }, Seen::Event);
    settle(&log);

    // While down: a went away, c got nosuid too, g came.
    let mut c_now = ro(&c);
    c_now.flags.insert(MountFlags::NOSUID);
    let g = fan(9, "/g");
    let live = vec![c_now.clone(), moved(&d, "/d2"), e, g];

    let r = reconcile(Some(&log), prev, &live, Backend::Fanotify, true).unwrap();
    assert_eq!(
        names(&r.changes),
        ["DETACH 8", "DETACH 1", "CHANGE 3", "ATTACH 9"]
    );
    assert!(r.changes.iter().all(|c| c.seen == Seen::Reconcile));
    assert_eq!(r.replayed, 9);
    assert_eq!((r.ids, r.gap), (Ids::Compared, None));
    // The CHANGE starts from what the log last said, not the checkpoint.
    let ChangeKind::Change { old, new } = &r.changes[2].kind else {
        panic!("{:?}", r.changes[2]);
    };
    assert_eq!((old, new), (&ro(&c), &c_now));
}

/// The records a restart appends are flagged COMPARE | RECONCILED, and a
/// second restart from the same checkpoint (a crash right after the first)
/// finds nothing more to log.
#[test]
fn a_second_restart_from_the_same_checkpoint_logs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = mem_log(dir.path());
    let prev = Previous {
        mounts: vec![fan(1, "/a"), fan(2, "/b")],
        log_index: 0,
    };
    let live = vec![ro(&fan(1, "/a")), fan(3, "/c")];
    let r = reconcile(Some(&log), prev.clone(), &live, Backend::Fanotify, true).unwrap();
    assert_eq!(names(&r.changes), ["DETACH 2", "CHANGE 1", "ATTACH 3"]);
    for c in &r.changes {
        let _ = record::append(&log, c).unwrap();
    }
    settle(&log);
    let flags: Vec<u16> = log.reader(1).map(|r| r.unwrap().flags).collect();
    assert_eq!(flags, [FLAG_COMPARE | weir_log::FLAG_RECONCILED; 3]);

    let again = reconcile(Some(&log), prev, &live, Backend::Fanotify, true).unwrap();
    assert_eq!(names(&again.changes), Vec::<String>::new());
    assert_eq!(again.replayed, 3);
}

/// mountinfo reuses the lowest free id: over a downtime, another mount with
/// the old one's id is a detach and an attach, not a move or a change.
/// fanotify's ids are unique, so there the same id is the same mount.
#[test]
fn a_reused_mountinfo_id_is_detach_and_attach() {
    let bind = |id: u64, point: &str| {
        let mut m = info(id, point);
        m.minor = 1;
        m.major = 8;
        m.source = b"/dev/sda1".as_slice().into();
        m.root = b"/src".as_slice().into();
        m
    };
    let prev = Previous {
        mounts: vec![bind(5, "/x")],
        log_index: 0,
    };
    let live = [bind(5, "/y")];
    let r = reconcile(None, prev, &live, Backend::Mountinfo, true).unwrap();
    assert_eq!(names(&r.changes), ["DETACH 5", "ATTACH 5"]);

    let mut other_source = bind(5, "/x");
    other_source.source = b"/dev/sdb1".as_slice().into();
    let prev = Previous {
        mounts: vec![bind(5, "/x")],
        log_index: 0,
    };
    let r = reconcile(None, prev, &[other_source], Backend::Mountinfo, true).unwrap();
    assert_eq!(names(&r.changes), ["DETACH 5", "ATTACH 5"]);

    // A remount keeps its identity under mountinfo too.
    let prev = Previous {
        mounts: vec![bind(5, "/x")],
        log_index: 0,
    };
    let r = reconcile(None, prev, &[ro(&bind(5, "/x"))], Backend::Mountinfo, true).unwrap();
    assert_eq!(names(&r.changes), ["CHANGE 5"]);

    let prev = Previous {
        mounts: vec![fan(5, "/x")],
        log_index: 0,
    };
    let r = reconcile(None, prev, &[fan(5, "/y")], Backend::Fanotify, true).unwrap();
    assert_eq!(names(&r.changes), ["MOVE 5"]);
}

/// Across a boot, or from the other backend's ids, no id means anything:
/// every previous mount detaches and every live one attaches, even an
/// identical one.
#[test]
fn ids_are_not_compared_across_boots_or_backends() {
    let prev = Previous {
        mounts: vec![fan(1, "/"), fan(2, "/a")],
        log_index: 0,
    };
    let live = [fan(1, "/"), fan(2, "/a")];
    let r = reconcile(None, prev.clone(), &live, Backend::Fanotify, false).unwrap();
    assert_eq!(
        names(&r.changes),
        ["DETACH 2", "DETACH 1", "ATTACH 1", "ATTACH 2"]
    );
    assert_eq!(r.ids, Ids::OtherBoot);

    let live = [info(1, "/"), info(2, "/a")];
    let r = reconcile(None, prev, &live, Backend::Mountinfo, true).unwrap();
    assert_eq!(r.ids, Ids::OtherBackend);
    assert_eq!(r.changes.len(), 4);

    let same = reconcile(
        None,
        Previous {
            mounts: live.to_vec(),
            log_index: 0,
        },
        &live,
        Backend::Mountinfo,
        true,
    )
    .unwrap();
    assert_eq!((same.ids, same.changes.len()), (Ids::Compared, 0));
}

/// A MOVE of a mount the checkpoint does not hold (the log and checkpoint
/// disagree): if the mount is live, the live one stands in without a
/// record; if it is gone, it detaches with what the record said of it.
#[test]
fn a_mount_the_log_only_partly_describes_defers_to_the_live_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = mem_log(dir.path());
    let (x, y) = (fan(1, "/x"), fan(2, "/y"));
    for m in [&x, &y] {
        log_change(
            &log,
            ChangeKind::Move {
                old: moved(m, "/old"),
                new: m.clone(),
            },
            Seen::Event,
        );
    }
    settle(&log);
    let prev = Previous {
        mounts: Vec::new(),
        log_index: 0,
    };
    let r = reconcile(Some(&log), prev, &[ro(&x)], Backend::Fanotify, true).unwrap();
    assert_eq!(names(&r.changes), ["DETACH 2"]);
    let ChangeKind::Detach(m) = &r.changes[0].kind else {
        panic!()
    };
    assert_eq!(&*m.mount_point, b"/y");
}

/// A checkpoint ahead of the log (records lost in a crash) is reported and
/// still compared.
#[test]
fn a_checkpoint_ahead_of_the_log_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let log = mem_log(dir.path());
    log_change(&log, ChangeKind::Attach(fan(1, "/a")), Seen::Event);
    settle(&log);
    let prev = Previous {
        mounts: vec![fan(1, "/a"), fan(2, "/b")],
        log_index: 5,
    };
    let r = reconcile(Some(&log), prev, &[fan(1, "/a")], Backend::Fanotify, true).unwrap();
    assert_eq!(r.gap, Some(Gap::LogEndsEarly { last: 1 }));
    assert_eq!(names(&r.changes), ["DETACH 2"]);
}

/// Flag words read back from a checkpoint reject bits this model does not
/// define.
#[test]
fn unknown_flag_bits_do_not_deserialize() {
    type D = serde::de::value::U32Deserializer<serde::de::value::Error>;
    let ok: D = MountFlags::ALL.0.into_deserializer();
    assert_eq!(MountFlags::deserialize(ok), Ok(MountFlags::ALL));
    let bad: D = 0x200u32.into_deserializer();
    assert!(MountFlags::deserialize(bad).is_err());
    let bad: D = 0x20u32.into_deserializer();
    assert!(SuperFlags::deserialize(bad).is_err());
    assert_eq!(
        SuperFlags::try_from(0x21),
        Err(crate::UnknownBits { bits: 0x20 })
    );
}
