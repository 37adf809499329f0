//! SATTR and MTIME: a file's and a directory's chmod, writes coalesced per close and per interval.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::Base;
use crate::support::journal::describe_all;
use crate::support::scratch::{FsKind, Scratch};
use weir_fs::ObjectId;
use weir_log::{LogRecord, RecordType};

use crate::session::*;

/// SATTR on a file's chmod, and MTIME once per close however many writes
/// came before it.
fn attrs(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: attrs");
    // An interval no test outlasts: every MTIME here is a close's.
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(3600));
    let _ = sn.step(|sn| {
        std::fs::create_dir(sn.path(b"d")).expect("mkdir");
        touch(&sn.path(b"d/f"));
    });
    let (d, f) = (sn.id(b"d"), sn.id(b"d/f"));
    let rs = sn.step(|sn| chmod(&sn.path(b"d/f"), 0o600));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::SATTR,
            flags: 0,
            target: &f,
            parent: &d,
            name: b"f",
            fields: &[("path", b"d/f")],
        },
    );
    // Ten writes and a close: one MTIME. Twice: one per close.
    for round in 0..2 {
        let rs = sn.step(|sn| {
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(sn.path(b"d/f"))
                .expect("open");
            for i in 0..10 {
                writeln!(file, "round {round} write {i}").expect("write");
            }
        });
        check(
            &format!("{what}: close {round}"),
            only(&what, &rs),
            &Want {
                kind: RecordType::MTIME,
                flags: 0,
                target: &f,
                parent: &d,
                name: b"f",
                fields: &[("path", b"d/f")],
            },
        );
    }
    // A new file written and closed: its CREAT, then its MTIME.
    let rs = sn.step(|sn| std::fs::write(sn.path(b"d/new"), b"contents").expect("write"));
    let new = sn.id(b"d/new");
    let kinds: Vec<RecordType> = rs.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [RecordType::CREAT, RecordType::MTIME],
        "{what}:\n{}",
        describe_all(&rs)
    );
    for r in &rs {
        assert_eq!(ObjectId::from_bytes(&r.target), Some(new.clone()), "{what}");
        assert_eq!(r.field("path"), Some(&b"d/new"[..]), "{what}");
    }
    sn.finish();
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", p.display()));
}

/// SATTR on a directory's chmod, and on the root's (no name, an empty
/// path, its own id as parent).
fn dir_attrs(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: directory attrs");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let _ = sn.step(|sn| std::fs::create_dir(sn.path(b"d")).expect("mkdir"));
    let d = sn.id(b"d");
    let rs = sn.step(|sn| chmod(&sn.path(b"d"), 0o700));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::SATTR,
            flags: 0,
            target: &d,
            parent: &root,
            name: b"d",
            fields: &[("path", b"d")],
        },
    );
    // The root itself: no name, an empty path, its own id as parent.
    let rs = sn.step(|sn| chmod(&sn.path(b""), 0o750));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::SATTR,
            flags: 0,
            target: &root,
            parent: &root,
            name: b"",
            fields: &[("path", b"")],
        },
    );

    sn.finish();
}

/// A file written and kept open gets an MTIME once the interval has
/// passed, before any close.
fn mtime_while_open(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: MTIME while open");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_millis(100));
    let root = sn.id(b"");
    let mut file = std::fs::File::create(sn.path(b"open")).expect("create");
    let f = sn.id(b"open");
    let rs = sn.step(|_| file.write_all(b"first").expect("write"));
    // The write itself is not a record yet: the file is open.
    let kinds: Vec<RecordType> = rs.iter().map(|r| r.kind).collect();
    assert!(
        kinds == [RecordType::CREAT] || kinds == [RecordType::CREAT, RecordType::MTIME],
        "{what}:\n{}",
        describe_all(&rs)
    );
    let mut seen: Vec<LogRecord> = rs
        .into_iter()
        .filter(|r| r.kind == RecordType::MTIME)
        .collect();
    // No bound on when it comes (that is the benchmarks' business), only
    // that it comes while the file is open; the deadline just ends a
    // test that would otherwise wait forever.
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        seen.extend(
            sn.step(|_| {})
                .into_iter()
                .filter(|r| r.kind == RecordType::MTIME),
        );
    }
    assert!(!seen.is_empty(), "{what}: no MTIME while the file was open");
    check(
        &what,
        &seen[0],
        &Want {
            kind: RecordType::MTIME,
            flags: 0,
            target: &f,
            parent: &root,
            name: b"open",
            fields: &[("path", b"open")],
        },
    );
    drop(file);
    let rs = sn.step(|_| {});
    assert!(
        rs.iter().all(|r| r.kind == RecordType::MTIME),
        "{what}: after the close:\n{}",
        describe_all(&rs)
    );
    sn.finish();
}

records_test!(attrs_tmpfs, inner_attrs_tmpfs, FsKind::Tmpfs, attrs);
records_test!(attrs_ext4, inner_attrs_ext4, FsKind::Ext4, attrs);
records_test!(
    dir_attrs_tmpfs,
    inner_dir_attrs_tmpfs,
    FsKind::Tmpfs,
    dir_attrs
);
records_test!(
    dir_attrs_ext4,
    inner_dir_attrs_ext4,
    FsKind::Ext4,
    dir_attrs
);
records_test!(
    mtime_open_tmpfs,
    inner_mtime_open_tmpfs,
    FsKind::Tmpfs,
    mtime_while_open
);
records_test!(
    mtime_open_ext4,
    inner_mtime_open_ext4,
    FsKind::Ext4,
    mtime_while_open
);
