//! A content-exact restart (`TrackerOptions::content`) from the trees'
//! persistent copy, on ext4 and tmpfs: a file written while nothing
//! watched gets one `MTIME` (one, though it has two names), a file whose
//! mode was changed a `SATTR`, both flagged `RECONCILED | COMPARE`; a new
//! file gets its `CREAT` alone, a renamed one its `RENME` and a new link
//! its `HLINK` (not a `SATTR` for the ctime they move), and an untouched
//! one nothing. Every
//! directory is read. (What changed within the margin, 2 s, before the
//! previous run's last record counts again: the test waits that long.) Without `content`, the same restart logs the
//! namespace alone.

mod support;

use std::os::unix::fs::PermissionsExt;

use support::journal::describe_all;
use support::run::{Run, at, mkdir, touch};
use support::scratch::{FsKind, Scratch, scratch};
use weir_fs::TrackerOptions;
use weir_fs::record::FLAG_COMPARE;
use weir_log::{FLAG_RECONCILED, LogRecord, RecordType};

const RECONCILED: u16 = FLAG_RECONCILED | FLAG_COMPARE;

fn run(s: &Scratch, base: &support::Base, content: bool) -> Run {
    Run::start(
        s,
        &base.path().join("log"),
        TrackerOptions {
            index: Some(base.path().join("state/fs/index.redb")),
            content,
            ..TrackerOptions::default()
        },
    )
}

/// The changes among `rs`, as (type, path).
fn changes(rs: &[LogRecord]) -> Vec<(RecordType, Vec<u8>)> {
    let mut v: Vec<_> = rs
        .iter()
        .filter(|r| r.kind != RecordType::MARK)
        .map(|r| (r.kind, r.field("path").unwrap_or_default().to_vec()))
        .collect();
    v.sort();
    v
}

fn content_restart(kind: FsKind) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: content-exact restart");
    base.mkdir("log");
    for d in ["a", "b"] {
        mkdir(&s, d);
    }
    for f in ["a/w", "a/c", "b/same", "b/other"] {
        touch(&s, f);
    }
    std::fs::hard_link(at(&s, "a/w"), at(&s, "b/w-link")).unwrap();
    // Older than the margin before the first run's last record, so that
    // only what changes while nothing watches counts.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    run(&s, &base, true).stop();

    // Nothing watches: a write, a chmod, a new file; then a
    // namespace-exact start, which sees the new file only.
    std::fs::write(at(&s, "a/w"), b"written").unwrap();
    std::fs::set_permissions(at(&s, "a/c"), std::fs::Permissions::from_mode(0o600)).unwrap();
    touch(&s, "a/new");
    // As before the first run: the third start counts what changed from
    // 2 s before the second run's last record on, and a/new is older.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    let second = run(&s, &base, false);
    let rs = second.records();
    assert_eq!(
        changes(&rs),
        [(RecordType::CREAT, b"a/new".to_vec())],
        "{what}: namespace-exact:\n{}",
        describe_all(&rs)
    );
    second.stop();

    std::fs::write(at(&s, "a/w"), b"written again").unwrap();
    std::fs::set_permissions(at(&s, "a/c"), std::fs::Permissions::from_mode(0o640)).unwrap();
    touch(&s, "b/new");
    // A rename and a new link move a file's ctime: their own records say
    // it, not a SATTR.
    std::fs::rename(at(&s, "b/other"), at(&s, "a/other")).unwrap();
    std::fs::hard_link(at(&s, "b/same"), at(&s, "b/same-link")).unwrap();
    let third = run(&s, &base, true);
    let rs = third.records();
    let got = changes(&rs);
    let written: Vec<_> = got
        .iter()
        .filter(|(k, _)| *k == RecordType::MTIME)
        .collect();
    assert_eq!(
        written.len(),
        1,
        "{what}: one MTIME for two names:\n{}",
        describe_all(&rs)
    );
    assert!(
        written[0].1 == b"a/w" || written[0].1 == b"b/w-link",
        "{what}:\n{}",
        describe_all(&rs)
    );
    let rest: Vec<_> = got
        .iter()
        .filter(|(k, _)| *k != RecordType::MTIME)
        .cloned()
        .collect();
    assert_eq!(
        rest,
        [
            (RecordType::CREAT, b"b/new".to_vec()),
            (RecordType::HLINK, b"b/same-link".to_vec()),
            (RecordType::RENME, b"a/other".to_vec()),
            (RecordType::SATTR, b"a/c".to_vec()),
        ],
        "{what}:\n{}",
        describe_all(&rs)
    );
    assert!(
        rs.iter()
            .filter(|r| r.kind != RecordType::MARK)
            .all(|r| r.flags & RECONCILED == RECONCILED),
        "{what}:\n{}",
        describe_all(&rs)
    );
    let mark = rs
        .iter()
        .find(|r| r.kind == RecordType::MARK)
        .expect("a MARK");
    assert_eq!(mark.name, b"fs tree reconciled", "{what}");
    assert_eq!(
        (mark.field("dirs_read"), mark.field("changes")),
        (Some(&b"3"[..]), Some(&b"5"[..])),
        "{what}: every directory read:\n{}",
        describe_all(&rs)
    );
    third.stop();
}

support::private_ns_test!(
    content_restart_on_tmpfs,
    inner_content_restart_on_tmpfs,
    content_restart,
    FsKind::Tmpfs
);
support::private_ns_test!(
    content_restart_on_ext4,
    inner_content_restart_on_ext4,
    content_restart,
    FsKind::Ext4
);
