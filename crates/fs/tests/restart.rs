//! A restart of the tracker on the same log (`resume: true`): what changed
//! while nothing watched is logged once, at the start, by comparing the
//! log's view of the root with a walk. On ext4 and tmpfs:
//!
//! 1. a tracker on an empty root logs some changes and stops;
//! 2. with nothing watching: files created and unlinked, a file renamed
//!    within and across directories, one renamed over another, a
//!    directory with contents renamed, a subtree removed, a hard link
//!    made, and a file replaced by a new one under its name;
//! 3. a new tracker on the same (reopened) log logs those changes flagged
//!    `RECONCILED | COMPARE`, then the MARK `fs tree reconciled` (and no
//!    second `fs root watched`); the renames are RENMEs (the objects keep
//!    their ids: an UNLNK and a CREAT would lose them for a consumer), a
//!    removed subtree's removals come deepest first, and the replay of the
//!    whole log is the live tree; the changes after it are logged as usual;
//! 4. a third start with no change in between logs the MARK alone.
//!
//! Also: a root that held entries when it was first watched was never
//! described entry by entry, so its restart is a fresh start (a new
//! `fs root watched`), as `weir_fs::replay` documents.

mod support;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use support::journal::{
    assert_replay_is_live, describe, describe_all, fsid, live_id, replay_counts,
};
use support::run::{Run, at, mkdir, rename, touch};
use support::scratch::{FsKind, Scratch, scratch};
use weir_fs::record::{FLAG_COMPARE, FLAG_LAST};
use weir_fs::{ObjectId, TrackerOptions};
use weir_log::{FLAG_RECONCILED, LogRecord, RecordType};

/// Both flags of a change found at a start.
const RECONCILED: u16 = FLAG_RECONCILED | FLAG_COMPARE;

/// A run on the log in `log_dir`, resuming or not.
fn run(s: &Scratch, log_dir: &Path, resume: bool) -> Run {
    Run::start(
        s,
        log_dir,
        TrackerOptions {
            resume,
            ..TrackerOptions::default()
        },
    )
}

/// The records whose target is `id`.
fn about<'r>(rs: &'r [LogRecord], id: &ObjectId) -> Vec<&'r LogRecord> {
    rs.iter()
        .filter(|r| ObjectId::from_bytes(&r.target).as_ref() == Some(id))
        .collect()
}

/// The one record of `rs` with type `kind` and `path`.
fn find<'r>(what: &str, rs: &'r [LogRecord], kind: RecordType, path: &str) -> &'r LogRecord {
    let found: Vec<&LogRecord> = rs
        .iter()
        .filter(|r| r.kind == kind && r.field("path") == Some(path.as_bytes()))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{what}: expected one {kind} of {path}, in:\n{}",
        describe_all(rs)
    );
    found[0]
}

fn restart_on(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: restart");
    let log_dir = base.mkdir("log");
    let fsid = fsid(s.root());
    let id = |rel: &str| live_id(fsid, &at(&s, rel));

    // 1. Watched: the tree the restart starts from.
    let first = run(&s, &log_dir, true);
    for d in [
        "keep",
        "moved",
        "moved/sub",
        "doomed",
        "doomed/sub",
        "doomed/sub/deeper",
    ] {
        mkdir(&s, d);
    }
    for f in [
        "keep/a",
        "keep/b",
        "moved/x",
        "moved/sub/y",
        "doomed/1",
        "doomed/sub/2",
        "doomed/sub/deeper/3",
        "gone",
        "file",
        "over-src",
        "over-dst",
        "l1",
    ] {
        touch(&s, f);
    }
    let rs = first.records();
    let watched = rs
        .iter()
        .find(|r| r.kind == RecordType::MARK)
        .unwrap_or_else(|| panic!("{what}: no MARK"))
        .clone();
    assert_eq!(watched.name, b"fs root watched", "{what}");
    assert_eq!(watched.field("entries"), Some(&b"0"[..]), "{what}");
    let stopped_at = rs.last().expect("records").index;
    first.stop();

    // The ids before the restart, of what is renamed or replaced meanwhile.
    let (a, file, moved, over_src, over_dst, old_b, gone, l1) = (
        id("keep/a"),
        id("file"),
        id("moved"),
        id("over-src"),
        id("over-dst"),
        id("keep/b"),
        id("gone"),
        id("l1"),
    );
    let (x, y) = (id("moved/x"), id("moved/sub/y"));

    // 2. Nothing watches.
    touch(&s, "new");
    mkdir(&s, "newdir");
    touch(&s, "newdir/inner");
    std::fs::remove_file(at(&s, "gone")).expect("unlink gone");
    rename(&s, "keep/a", "keep/a-renamed");
    rename(&s, "file", "keep/file-moved");
    rename(&s, "moved", "keep/moved2");
    rename(&s, "over-src", "over-dst");
    std::fs::remove_dir_all(at(&s, "doomed")).expect("rm -r doomed");
    std::fs::hard_link(at(&s, "l1"), at(&s, "l2")).expect("link");
    std::fs::remove_file(at(&s, "keep/b")).expect("unlink keep/b");
    touch(&s, "keep/b");
    let new_b = id("keep/b");
    assert_ne!(new_b, old_b, "{what}: the new keep/b is another file");

    // 3. The restart.
    let second = run(&s, &log_dir, true);
    let rs = second.records();
    let (mark, changes) = rs
        .split_last()
        .unwrap_or_else(|| panic!("{what}: nothing logged at the restart"));
    let ctx = || format!("{what}: the restart's records:\n{}", describe_all(&rs));
    // The MARK last, after the changes it counts, naming the root.
    assert_eq!(mark.kind, RecordType::MARK, "{}", ctx());
    assert_eq!(mark.name, b"fs tree reconciled", "{}", ctx());
    assert_eq!(mark.target, watched.target, "{}", ctx());
    assert_eq!(mark.field("source"), Some(&b"fs"[..]), "{}", ctx());
    assert_eq!(
        mark.field("root"),
        Some(s.root().as_os_str().as_bytes()),
        "{}",
        ctx()
    );
    assert_eq!(
        mark.field("since"),
        Some(watched.index.to_string().as_bytes()),
        "{}",
        ctx()
    );
    // Every record the first run logged after its MARK was replayed.
    let replayed = stopped_at - watched.index;
    assert_eq!(
        mark.field("replayed"),
        Some(replayed.to_string().as_bytes()),
        "{}",
        ctx()
    );
    assert_eq!(
        mark.field("changes"),
        Some(changes.len().to_string().as_bytes()),
        "{}",
        ctx()
    );
    let live = support::tree::snapshot(s.root()).len();
    assert_eq!(
        mark.field("entries"),
        Some(live.to_string().as_bytes()),
        "{}",
        ctx()
    );
    // Every change flagged as found at a start, and no other MARK.
    for r in changes {
        assert_ne!(r.kind, RecordType::MARK, "{}", ctx());
        assert_eq!(
            r.flags & RECONCILED,
            RECONCILED,
            "{what}: not flagged RECONCILED|COMPARE: {}",
            describe(r)
        );
    }

    // The renames: one RENME each, from the old place to the new, and
    // nothing else about the object.
    let renames: [(&ObjectId, &str, &str); 4] = [
        (&a, "keep/a", "keep/a-renamed"),
        (&file, "file", "keep/file-moved"),
        (&moved, "moved", "keep/moved2"),
        (&over_src, "over-src", "over-dst"),
    ];
    for (obj, from, to) in renames {
        let rs_of = about(changes, obj);
        assert!(
            rs_of.len() == 1 && rs_of[0].kind == RecordType::RENME,
            "{what}: {from} -> {to} is not one RENME:\n{}",
            rs_of
                .iter()
                .map(|r| describe(r))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let r = rs_of[0];
        assert_eq!(r.field("spath"), Some(from.as_bytes()), "{}", describe(r));
        assert_eq!(r.field("path"), Some(to.as_bytes()), "{}", describe(r));
        let sname = Path::new(from).file_name().expect("a name").as_bytes();
        assert_eq!(r.field("sname"), Some(sname), "{}", describe(r));
    }
    // The rename over a file names what it replaced.
    let over = about(changes, &over_src)[0];
    assert_eq!(
        over.field("overwritten"),
        Some(over_dst.hex().as_bytes()),
        "{}",
        describe(over)
    );
    assert_eq!(
        over.field("overwritten_last"),
        Some(&b"1"[..]),
        "{}",
        describe(over)
    );
    assert!(about(changes, &over_dst).is_empty(), "{}", ctx());
    // The moved directory took its contents along: nothing about them.
    assert!(about(changes, &x).is_empty(), "{}", ctx());
    assert!(about(changes, &y).is_empty(), "{}", ctx());

    // The removals: the unlinked file, and the subtree deepest first.
    let r = find(&what, changes, RecordType::UNLNK, "gone");
    assert_eq!(
        ObjectId::from_bytes(&r.target),
        Some(gone),
        "{}",
        describe(r)
    );
    assert_ne!(r.flags & FLAG_LAST, 0, "{}", describe(r));
    let index = |kind, path| find(&what, changes, kind, path).index;
    let subtree = [
        (
            RecordType::UNLNK,
            "doomed/sub/deeper/3",
            "doomed/sub/deeper",
        ),
        (RecordType::RMDIR, "doomed/sub/deeper", "doomed/sub"),
        (RecordType::UNLNK, "doomed/sub/2", "doomed/sub"),
        (RecordType::RMDIR, "doomed/sub", "doomed"),
        (RecordType::UNLNK, "doomed/1", "doomed"),
    ];
    for (kind, path, dir) in subtree {
        assert!(
            index(kind, path) < index(RecordType::RMDIR, dir),
            "{what}: {path} removed after its directory {dir}:\n{}",
            describe_all(changes)
        );
    }
    // And the subtree's top went too (once: `find` checks).
    find(&what, changes, RecordType::RMDIR, "doomed");

    // The creations, parents first; the hard link as an HLINK of l1; the
    // replaced file as an UNLNK of the old and a CREAT of the new.
    assert!(
        index(RecordType::MKDIR, "newdir") < index(RecordType::CREAT, "newdir/inner"),
        "{}",
        ctx()
    );
    find(&what, changes, RecordType::CREAT, "new");
    let r = find(&what, changes, RecordType::HLINK, "l2");
    assert_eq!(ObjectId::from_bytes(&r.target), Some(l1), "{}", describe(r));
    let r = find(&what, changes, RecordType::UNLNK, "keep/b");
    assert_eq!(
        ObjectId::from_bytes(&r.target),
        Some(old_b),
        "{}",
        describe(r)
    );
    let r = find(&what, changes, RecordType::CREAT, "keep/b");
    assert_eq!(
        ObjectId::from_bytes(&r.target),
        Some(new_b),
        "{}",
        describe(r)
    );

    eprintln!(
        "{what}: {} changes reconciled after {replayed} records replayed",
        changes.len()
    );
    // Watched again from here: a change is logged as usual.
    let before = rs.len();
    touch(&s, "keep/after");
    let rs = second.records();
    let after = &rs[before..];
    assert!(
        after.len() == 1 && after[0].kind == RecordType::CREAT && after[0].flags == 0,
        "{what}: after the restart:\n{}",
        describe_all(after)
    );
    assert_replay_is_live(&second.log, s.root(), &what);
    second.stop();

    // 4. A start with nothing changed: the MARK alone, no change.
    let third = run(&s, &log_dir, true);
    let rs = third.records();
    assert!(
        rs.len() == 1
            && rs[0].name == b"fs tree reconciled"
            && rs[0].field("changes") == Some(&b"0"[..]),
        "{what}: a restart with nothing changed:\n{}",
        describe_all(&rs)
    );
    // Every record of the whole log applies in the replay, and the replay
    // is the live tree.
    let (n, applied) = replay_counts(&third.log, s.root());
    assert_eq!(applied, n, "{what}: {n} change records, {applied} applied");
    assert_replay_is_live(&third.log, s.root(), &what);
    third.stop();
}

/// A root that already held entries at its first watch: a restart is a
/// fresh start, even with `resume` (no view of it to compare with); and
/// `resume: false` is a fresh start whatever the log holds.
fn fresh_start_on(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: fresh start");
    let log_dir = base.mkdir("log");
    touch(&s, "there-before");
    let marks = |rs: &[LogRecord]| -> Vec<Vec<u8>> {
        rs.iter()
            .filter(|r| r.kind == RecordType::MARK)
            .map(|r| r.name.clone())
            .collect()
    };
    let first = run(&s, &log_dir, true);
    let rs = first.records();
    assert_eq!(marks(&rs), [b"fs root watched".to_vec()], "{what}");
    assert_eq!(rs[0].field("entries"), Some(&b"1"[..]), "{what}");
    first.stop();
    touch(&s, "while-down");
    let second = run(&s, &log_dir, true);
    let rs = second.records();
    // Nothing about the file made meanwhile: there was nothing to compare
    // with.
    assert!(
        rs.len() == 1 && marks(&rs) == [b"fs root watched".to_vec()],
        "{what}: a restart of a root first watched with entries:\n{}",
        describe_all(&rs)
    );
    assert_eq!(rs[0].field("entries"), Some(&b"2"[..]), "{what}");
    second.stop();

    // An empty root, watched, then started with `resume: false`.
    let Some(s2) = scratch(kind, base.path()) else {
        return;
    };
    let log2 = base.mkdir("log2");
    let first = run(&s2, &log2, true);
    let _ = first.records();
    first.stop();
    touch(&s2, "while-down");
    let second = run(&s2, &log2, false);
    let rs = second.records();
    assert!(
        rs.len() == 1
            && marks(&rs) == [b"fs root watched".to_vec()]
            && rs[0].field("entries") == Some(&b"1"[..]),
        "{what}: resume: false:\n{}",
        describe_all(&rs)
    );
    second.stop();
}

support::private_ns_test!(
    restart_on_ext4,
    inner_restart_on_ext4,
    restart_on,
    FsKind::Ext4
);
support::private_ns_test!(
    restart_on_tmpfs,
    inner_restart_on_tmpfs,
    restart_on,
    FsKind::Tmpfs
);
support::private_ns_test!(
    fresh_start_on_ext4,
    inner_fresh_start_on_ext4,
    fresh_start_on,
    FsKind::Ext4
);
