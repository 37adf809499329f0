//! A watched root that goes: its directory removed, or moved away. The
//! root gets a MARK (`fs root removed`, `fs root moved` with where it
//! went), nothing more is logged for it, its state says so, `sync` still
//! answers, and the other root on the same filesystem is watched as
//! before. A replay of the path finds no tree after the MARK. On ext4 and
//! tmpfs.

mod support;

use std::path::Path;
use std::sync::Arc;

use support::journal::{describe_all, records_from};
use support::scratch::{FsKind, scratch};
use weir_fs::{RootState, Tracker, TrackerOptions};
use weir_log::{Log, LogRecord, Options, RecordType};

fn marks(rs: &[LogRecord]) -> Vec<Vec<u8>> {
    rs.iter()
        .filter(|r| r.kind == RecordType::MARK)
        .map(|r| r.name.clone())
        .collect()
}

fn paths(rs: &[LogRecord]) -> Vec<Vec<u8>> {
    rs.iter()
        .filter(|r| r.kind != RecordType::MARK)
        .filter_map(|r| r.field("path").map(<[u8]>::to_vec))
        .collect()
}

fn state_of(t: &Tracker, root: &Path) -> RootState {
    t.roots()
        .into_iter()
        .find(|r| r.path == root)
        .map(|r| r.state)
        .expect("the root is listed")
}

fn root_end_on(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: a root that goes");
    let (a, b, c) = (s.root().join("a"), s.root().join("b"), s.root().join("c"));
    for d in [&a, &b, &c] {
        std::fs::create_dir(d).expect("mkdir");
    }
    let log = Arc::new(Log::open(base.mkdir("log"), Options::default()).expect("open the log"));
    let t = Tracker::start(
        Some(log.clone()),
        TrackerOptions {
            roots: vec![a.clone(), b.clone(), c.clone()],
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{what}: start: {e}"));
    let from = log.last_index() + 1;

    // a: emptied, then removed.
    std::fs::create_dir(a.join("sub")).expect("mkdir");
    std::fs::File::create(a.join("sub/f")).expect("create");
    t.sync().expect("sync");
    std::fs::remove_dir_all(&a).expect("rm -r a");
    t.sync().expect("a sync after the root's removal");
    assert_eq!(state_of(&t, &a), RootState::Removed, "{what}");
    let rs = records_from(&log, from);
    assert_eq!(
        marks(&rs),
        [b"fs root removed".to_vec()],
        "{what}:\n{}",
        describe_all(&rs)
    );
    // Its entries' removals came first, each logged.
    let kinds: Vec<RecordType> = rs.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RecordType::MKDIR,
            RecordType::CREAT,
            RecordType::UNLNK,
            RecordType::RMDIR,
            RecordType::MARK
        ],
        "{what}:\n{}",
        describe_all(&rs)
    );
    assert!(
        weir_fs::replay::view(&log, &a, None)
            .expect("replay")
            .is_none(),
        "{what}: a removed root has no view"
    );

    // b: moved away, with an entry; what happens in it after is not
    // logged, while c is watched as before.
    std::fs::File::create(b.join("kept")).expect("create");
    t.sync().expect("sync");
    let moved = s.root().join("b-moved");
    std::fs::rename(&b, &moved).expect("mv b");
    t.sync().expect("a sync after the root's move");
    std::fs::File::create(moved.join("after")).expect("create");
    std::fs::File::create(c.join("still")).expect("create");
    t.sync().expect("sync");
    assert_eq!(
        state_of(&t, &b),
        RootState::Moved {
            to: Some(moved.clone())
        },
        "{what}"
    );
    let rs = records_from(&log, from);
    let r = rs
        .iter()
        .find(|r| r.kind == RecordType::MARK && r.name == b"fs root moved")
        .unwrap_or_else(|| panic!("{what}: no move MARK:\n{}", describe_all(&rs)));
    assert_eq!(r.field("root"), Some(support::bytes(&b)), "{what}");
    assert_eq!(r.field("to"), Some(support::bytes(&moved)), "{what}");
    let logged = paths(&rs);
    assert!(
        logged.contains(&b"kept".to_vec()) && logged.contains(&b"still".to_vec()),
        "{what}:\n{}",
        describe_all(&rs)
    );
    assert!(
        !logged.contains(&b"after".to_vec()),
        "{what}: a change in the moved root was logged:\n{}",
        describe_all(&rs)
    );
    assert_eq!(state_of(&t, &c), RootState::Watching, "{what}");
    t.stop().expect("stop");
}

support::private_ns_test!(
    root_end_on_ext4,
    inner_root_end_on_ext4,
    root_end_on,
    FsKind::Ext4
);
support::private_ns_test!(
    root_end_on_tmpfs,
    inner_root_end_on_tmpfs,
    root_end_on,
    FsKind::Tmpfs
);
