//! The order of records under a storm of renames of one entry: 10,000
//! renames of one file back and forth between two directories, then
//! `sync`; the replay must end with the file where it is (in the first
//! directory after an even count, in the second after an odd one), under
//! the id it was created with, every record must follow from the ones
//! before it, and nothing may be logged as an unlink or a new file. Then
//! two processes doing the same to two files at once. On ext4, xfs, a
//! btrfs subvolume and tmpfs.
//!
//! One process, since the kernel merges a queued event into an identical
//! one of the same process still queued: `a→b` #3 vanishes into `a→b` #1,
//! and the queue then says the file went back to `a` when it is in `b`.
//! That is the case where the tracker must not trust the last event, but
//! look at the entry again (`VERIFIED`), and must still log a rename, not
//! an UNLNK and a CREAT. Two processes: their events do not merge with each
//! other's, but do interleave.

mod support;

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::fs::{Mode, OFlags};
use support::journal::{
    assert_replay_is_live, describe_all, open_log, records_from, replay_counts,
};
use support::scratch::{FsKind, Scratch, scratch};
use weir_fs::{ObjectId, Tracker, TrackerOptions};
use weir_log::{Log, LogRecord, RecordType};

/// Renames of one file, by one process.
const RENAMES: usize = 10_000;

/// The environment of a renaming child: the two directories, the file's
/// name, and how many renames.
const ENV_FROM: &str = "WEIR_FS_ORDERING_FROM";
const ENV_TO: &str = "WEIR_FS_ORDERING_TO";
const ENV_NAME: &str = "WEIR_FS_ORDERING_NAME";
const ENV_COUNT: &str = "WEIR_FS_ORDERING_COUNT";
/// The line a child prints before it waits for the start.
const READY: &str = "WEIR_FS_ORDERING_READY";

/// Renames `name` from `dirs[0]` to `dirs[1]` and back, `count` times in
/// all, starting from `dirs[0]`.
fn rename_back_and_forth(dirs: [&Path; 2], name: &[u8], count: usize) {
    let open = |d: &Path| {
        rustix::fs::open(
            d,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap_or_else(|e| panic!("open {}: {e}", d.display()))
    };
    let fds = [open(dirs[0]), open(dirs[1])];
    for i in 0..count {
        let (from, to) = (&fds[i % 2], &fds[(i + 1) % 2]);
        rustix::fs::renameat(from, name, to, name)
            .unwrap_or_else(|e| panic!("rename #{i} of {}: {e}", support::tree::show(name)));
    }
}

/// The child half of [`two_processes`]: one process's renames, started
/// when the parent closes its stdin.
#[test]
#[ignore = "a child process of the two-process ordering tests"]
fn rename_child() {
    let Some(a) = std::env::var_os(ENV_FROM) else {
        eprintln!("not run: a child of the two-process ordering tests only");
        return;
    };
    let b = std::env::var_os(ENV_TO).expect("the second directory");
    let (a, b) = (Path::new(&a), Path::new(&b));
    let name = std::env::var_os(ENV_NAME).expect("a name");
    let count: usize = std::env::var(ENV_COUNT)
        .expect("a count")
        .parse()
        .expect("a number");
    println!("\n{READY}");
    std::io::stdout().flush().expect("flush");
    let mut sink = Vec::new();
    std::io::stdin()
        .read_to_end(&mut sink)
        .expect("wait for the start");
    rename_back_and_forth([a, b], name.as_bytes(), count);
}

/// A tracker on `s`'s root with a log in `log_dir`.
fn watch(s: &Scratch, log_dir: &Path) -> (std::sync::Arc<Log>, Tracker) {
    let log = open_log(log_dir);
    let t = Tracker::start(
        Some(log.clone()),
        TrackerOptions {
            roots: vec![s.root().to_path_buf()],
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{}: starting the tracker: {e}", s.kind()));
    (log, t)
}

/// The id of the first CREAT of `name` in `records`: the file's, as it
/// was made before the renames.
fn created(what: &str, records: &[LogRecord], name: &[u8]) -> ObjectId {
    let r = records
        .iter()
        .find(|r| r.kind == RecordType::CREAT && r.name == name)
        .unwrap_or_else(|| panic!("{what}: no CREAT of the file:\n{}", describe_all(records)));
    ObjectId::from_bytes(&r.target).expect("an id")
}

/// How strictly [`check_after`] reads the records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Records {
    /// The end state: where the file is, its id, every record applied.
    End,
    /// And every record of the file after its CREAT a RENME: it was never
    /// unlinked, re-created or linked.
    OnlyRenames,
}

/// Checks the log after the renames: `files` (name, the directory it must
/// be in at the end, the other one) each once in the replay, where it is
/// live, under the id it was created with; every record applied; the
/// replay the live tree; and with [`Records::OnlyRenames`], no record but
/// a RENME about a file after its CREAT, and no removal at all.
fn check_after(
    what: &str,
    log: &Log,
    s: &Scratch,
    files: &[(&[u8], &[u8], &[u8])],
    strict: Records,
) {
    let all = records_from(log, 1);
    let view = weir_fs::replay::view(log, s.root(), None)
        .expect("reading the log")
        .expect("a view");
    let listing = view.tree.listing();
    for &(name, there, other) in files {
        let id = created(what, &all, name);
        let at = support::tree::join(there, name);
        let not = support::tree::join(other, name);
        let e = listing
            .get(&at)
            .unwrap_or_else(|| panic!("{what}: the replay has no {}", support::tree::show(&at)));
        assert_eq!(e.id, id, "{what}: the file's id changed");
        assert!(
            !listing.contains_key(&not),
            "{what}: the replay also has {}",
            support::tree::show(&not)
        );
        assert!(
            s.root().join(OsStr::from_bytes(&at)).exists(),
            "{what}: the live file is not at {}",
            support::tree::show(&at)
        );
        let about: Vec<&LogRecord> = all
            .iter()
            .filter(|r| ObjectId::from_bytes(&r.target).as_ref() == Some(&id))
            .collect();
        eprintln!(
            "{what}: {} records of {} after its CREAT, {} of them verified",
            about.len() - 1,
            support::tree::show(name),
            about[1..]
                .iter()
                .filter(|r| r.flags & weir_fs::record::FLAG_VERIFIED != 0)
                .count()
        );
        if strict == Records::OnlyRenames {
            // After its CREAT, the file only ever moved.
            let odd: Vec<LogRecord> = about[1..]
                .iter()
                .filter(|r| r.kind != RecordType::RENME)
                .map(|r| (*r).clone())
                .collect();
            assert!(
                odd.is_empty(),
                "{what}: records of the file other than RENME after its CREAT:\n{}",
                describe_all(&odd)
            );
        }
    }
    if strict == Records::OnlyRenames {
        // No removal of anything at all: nothing was removed.
        let gone: Vec<LogRecord> = all
            .iter()
            .filter(|r| matches!(r.kind, RecordType::UNLNK | RecordType::RMDIR))
            .cloned()
            .collect();
        assert!(
            gone.is_empty(),
            "{what}: removals logged:\n{}",
            describe_all(&gone)
        );
    }
    let (changes, replayed) = replay_counts(log, s.root());
    assert_eq!(
        replayed, changes,
        "{what}: {changes} change records, but only {replayed} applied in the replay"
    );
    assert_replay_is_live(log, s.root(), what);
}

/// One process renames one file `count` times between `a` and `b`.
fn one_process(kind: FsKind, count: usize, strict: Records) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: {count} renames by one process");
    let (log, tracker) = watch(&s, &base.mkdir("log"));
    let (a, b) = (s.root().join("a"), s.root().join("b"));
    std::fs::create_dir(&a).expect("mkdir a");
    std::fs::create_dir(&b).expect("mkdir b");
    std::fs::File::create(a.join("f")).expect("create a/f");
    // The CREAT first, so that the renames are of a file the log knows.
    tracker.sync().expect("sync");
    rename_back_and_forth([&a, &b], b"f", count);
    tracker.sync().expect("sync");
    let stats = tracker.stats();
    tracker.stop().expect("stop");
    eprintln!(
        "{what}: {} events in {} reads, {} records, {} overflows",
        stats.events, stats.reads, stats.records, stats.overflows
    );
    let (there, other): (&[u8], &[u8]) = if count.is_multiple_of(2) {
        (b"a", b"b")
    } else {
        (b"b", b"a")
    };
    check_after(&what, &log, &s, &[(b"f", there, other)], strict);
}

/// Two processes at once: one renames `f1` between `a` and `b` 10,000
/// times (ending in `a`), the other `f2` between `b` and `a` 10,001 times
/// (ending in `a` too, having started in `b`).
fn two_processes(kind: FsKind, strict: Records) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    let what = format!("{kind}: renames by two processes");
    let (log, tracker) = watch(&s, &base.mkdir("log"));
    let (a, b) = (s.root().join("a"), s.root().join("b"));
    std::fs::create_dir(&a).expect("mkdir a");
    std::fs::create_dir(&b).expect("mkdir b");
    std::fs::File::create(a.join("f1")).expect("create a/f1");
    std::fs::File::create(b.join("f2")).expect("create b/f2");
    tracker.sync().expect("sync");
    let exe = std::env::current_exe().expect("current_exe");
    let jobs: [(&str, [&PathBuf; 2], usize); 2] =
        [("f1", [&a, &b], RENAMES), ("f2", [&b, &a], RENAMES + 1)];
    let mut children: Vec<_> = jobs
        .iter()
        .map(|(name, dirs, count)| {
            Command::new(&exe)
                .args([
                    "rename_child",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ENV_FROM, dirs[0])
                .env(ENV_TO, dirs[1])
                .env(ENV_NAME, name)
                .env(ENV_COUNT, count.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    // Both ready, then both started at once (their stdin closed).
    let mut outs = Vec::new();
    for c in &mut children {
        let mut r = BufReader::new(c.stdout.take().expect("piped"));
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).expect("read a child's stdout") == 0 {
                break;
            }
            seen.push_str(&line);
            if line.starts_with(READY) {
                break;
            }
        }
        outs.push((r, seen));
    }
    for c in &mut children {
        drop(c.stdin.take());
    }
    for (mut c, (mut r, mut seen)) in children.into_iter().zip(outs) {
        r.read_to_string(&mut seen).expect("read a child's stdout");
        let status = c.wait().expect("wait for a child");
        assert!(
            status.success() && seen.contains("test result: ok. 1 passed"),
            "{what}: a child failed ({status}):\n{seen}"
        );
    }
    tracker.sync().expect("sync");
    let stats = tracker.stats();
    tracker.stop().expect("stop");
    eprintln!(
        "{what}: {} events in {} reads, {} records, {} overflows",
        stats.events, stats.reads, stats.records, stats.overflows
    );
    check_after(
        &what,
        &log,
        &s,
        &[(b"f1", b"a", b"b"), (b"f2", b"a", b"b")],
        strict,
    );
}

macro_rules! ordering_test {
    ($outer:ident, $inner:ident, $kind:expr, $strict:expr) => {
        #[test]
        fn $outer() {
            support::run_in_private_ns(stringify!($inner));
        }

        #[test]
        #[ignore = "run by its outer test in a private mount namespace"]
        fn $inner() {
            // An even count ends where it started, an odd one in the
            // other directory.
            one_process($kind, RENAMES, $strict);
            one_process($kind, RENAMES + 1, $strict);
            two_processes($kind, $strict);
        }
    };
}

ordering_test!(
    ordering_on_ext4,
    inner_ordering_on_ext4,
    FsKind::Ext4,
    Records::End
);
ordering_test!(
    ordering_on_xfs,
    inner_ordering_on_xfs,
    FsKind::Xfs,
    Records::End
);
ordering_test!(
    ordering_on_btrfs_subvolume,
    inner_ordering_on_btrfs_subvolume,
    FsKind::Btrfs,
    Records::End
);
ordering_test!(
    ordering_on_tmpfs,
    inner_ordering_on_tmpfs,
    FsKind::Tmpfs,
    Records::End
);

// The same storms, read strictly: a file that was only ever renamed has
// only RENMEs after its CREAT.
ordering_test!(
    only_renames_on_ext4,
    inner_only_renames_on_ext4,
    FsKind::Ext4,
    Records::OnlyRenames
);
ordering_test!(
    only_renames_on_tmpfs,
    inner_only_renames_on_tmpfs,
    FsKind::Tmpfs,
    Records::OnlyRenames
);
