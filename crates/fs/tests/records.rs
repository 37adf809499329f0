//! Every record weir-fs writes, field by field, on tmpfs and ext4: the
//! MARK a watch starts with, CREAT, MKDIR, MKNOD (fifo, socket, char and
//! block nodes), SLINK, HLINK, UNLNK and RMDIR (with `LAST` only on an
//! object's last name), RENME within and across directories, over an
//! existing file, as a `RENAME_EXCHANGE`, into the tree from outside it
//! (`IN`, the contents then `COMPARE`) and out of it (`OUT`), SATTR, and
//! MTIME (coalesced per close, and per interval for a file kept open);
//! and names that are not UTF-8, hold a newline or are 255 bytes long.
//!
//! The exactness test (exact.rs) checks that the records replay to the
//! live tree. This checks the layout a consumer reads without weir's
//! decoder: each record's type, flags, target, parent and name, and its
//! exact set of fields and their values, with every id compared with the
//! live object's (`statfs` fsid + `name_to_handle_at`) and every `path`
//! relative to the root. One operation at a time, each followed by
//! `sync`, so each step's records are exactly the ones it caused; every
//! session ends with its whole log replayed and compared with the tree.
//!
//! Two of these found bugs, now fixed: a directory's SATTR (`dir_attrs_*`:
//! an event on a directory itself carries no FID record), and
//! RENAME_EXCHANGE split by a read between its two events (`exchanges_*`).

mod support;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::{CWD, FileType, Mode, RenameFlags};
use support::Base;
use support::journal::{assert_replay_is_live, describe, describe_all, fsid, live_id, open_log};
use support::scratch::{FsKind, Scratch, scratch};
use support::tree::show;
use weir_fs::ObjectId;
use weir_fs::record::{FLAG_COMPARE, FLAG_EXCHANGE, FLAG_IN, FLAG_LAST, FLAG_OUT};
use weir_fs::{Tracker, TrackerOptions};
use weir_log::{Log, LogRecord, RecordType};

/// One tracker on a scratch root, read back step by step.
struct Session<'a> {
    what: String,
    root: &'a Path,
    fsid: [u32; 2],
    log: Arc<Log>,
    tracker: Option<Tracker>,
    /// The first log index not yet returned by [`Session::records`].
    next: u64,
    /// What the start logged (made readable by a sync).
    started: Vec<LogRecord>,
}

impl<'a> Session<'a> {
    /// Starts a tracker on `s`'s root, logging to `log_dir`, with files
    /// kept open getting an MTIME every `mtime_interval`.
    fn start(what: &str, s: &'a Scratch, log_dir: &Path, mtime_interval: Duration) -> Session<'a> {
        let log = open_log(log_dir);
        let next = log.last_index() + 1;
        let tracker = Tracker::start(
            Some(log.clone()),
            TrackerOptions {
                roots: vec![s.root().to_path_buf()],
                mtime_interval,
                ..TrackerOptions::default()
            },
            None,
        )
        .unwrap_or_else(|e| panic!("{what}: starting the tracker: {e}"));
        let mut sn = Session {
            what: what.to_owned(),
            root: s.root(),
            fsid: fsid(s.root()),
            log,
            tracker: Some(tracker),
            next,
            started: Vec::new(),
        };
        // `start` appends its MARK; a sync makes it readable, and keeps
        // it out of the first step's records.
        sn.started = sn.step(|_| {});
        sn
    }

    fn tracker(&self) -> &Tracker {
        self.tracker.as_ref().expect("running")
    }

    /// The records appended since the last call.
    fn records(&mut self) -> Vec<LogRecord> {
        let rs = support::journal::records_from(&self.log, self.next);
        if let Some(r) = rs.last() {
            self.next = r.index + 1;
        }
        rs
    }

    /// Runs `op` (given the session, for its paths), syncs, and returns
    /// the records it caused.
    fn step(&mut self, op: impl FnOnce(&Session<'a>)) -> Vec<LogRecord> {
        op(self);
        self.tracker()
            .sync()
            .unwrap_or_else(|e| panic!("{}: sync: {e}", self.what));
        self.records()
    }

    /// The absolute path of `rel` (raw bytes, relative to the root).
    fn path(&self, rel: &[u8]) -> PathBuf {
        if rel.is_empty() {
            return self.root.to_path_buf();
        }
        self.root.join(OsStr::from_bytes(rel))
    }

    /// The live id of `rel`.
    fn id(&self, rel: &[u8]) -> ObjectId {
        live_id(self.fsid, &self.path(rel))
    }

    /// Stops the tracker, and checks that the whole log replays to the
    /// live tree.
    fn finish(mut self) {
        if let Some(t) = self.tracker.take() {
            t.stop()
                .unwrap_or_else(|e| panic!("{}: stop: {e}", self.what));
        }
        assert_replay_is_live(&self.log, self.root, &self.what);
    }
}

/// What one record must be: its type, flags, target, parent, name, and
/// exactly these fields (in any order).
struct Want<'a> {
    kind: RecordType,
    flags: u16,
    target: &'a ObjectId,
    parent: &'a ObjectId,
    name: &'a [u8],
    fields: &'a [(&'a str, &'a [u8])],
}

fn check(what: &str, r: &LogRecord, w: &Want<'_>) {
    let ctx = || format!("{what}: record {}", describe(r));
    assert_eq!(r.kind, w.kind, "{}: type", ctx());
    assert_eq!(r.flags, w.flags, "{}: flags", ctx());
    assert_eq!(
        ObjectId::from_bytes(&r.target).as_ref(),
        Some(w.target),
        "{}: target",
        ctx()
    );
    assert_eq!(
        ObjectId::from_bytes(&r.parent).as_ref(),
        Some(w.parent),
        "{}: parent",
        ctx()
    );
    assert_eq!(show(&r.name), show(w.name), "{}: name", ctx());
    let mut got: Vec<(String, String)> =
        r.fields.iter().map(|(k, v)| (k.clone(), show(v))).collect();
    let mut want: Vec<(String, String)> = w
        .fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), show(v)))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{}: fields", ctx());
    // Paths are relative to the root, never absolute.
    for key in ["path", "spath"] {
        if let Some(p) = r.field(key) {
            assert!(!p.starts_with(b"/"), "{}: {key} is absolute", ctx());
        }
    }
}

/// Asserts that a step gave exactly one record, and returns it.
fn only<'r>(what: &str, rs: &'r [LogRecord]) -> &'r LogRecord {
    assert_eq!(
        rs.len(),
        1,
        "{what}: expected one record, got:\n{}",
        describe_all(rs)
    );
    &rs[0]
}

/// `a/b` as bytes.
fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    support::tree::join(a, b)
}

fn touch(p: &Path) {
    std::fs::File::create(p).unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
}

/// Makes a scratch of `kind` with a log directory and runs `body`.
fn on(kind: FsKind, body: fn(FsKind, &Base, &Scratch)) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    body(kind, &base, &s);
}

macro_rules! records_test {
    ($outer:ident, $inner:ident, $kind:expr, $body:path) => {
        #[test]
        fn $outer() {
            support::run_in_private_ns(stringify!($inner));
        }

        records_test!(@inner $inner, $kind, $body);
    };
    (@inner $inner:ident, $kind:expr, $body:path) => {
        #[test]
        #[ignore = "run by its outer test in a private mount namespace"]
        fn $inner() {
            on($kind, $body);
        }
    };
}

records_test!(mark_tmpfs, inner_mark_tmpfs, FsKind::Tmpfs, mark_at_start);
records_test!(mark_ext4, inner_mark_ext4, FsKind::Ext4, mark_at_start);
records_test!(entries_tmpfs, inner_entries_tmpfs, FsKind::Tmpfs, entries);
records_test!(entries_ext4, inner_entries_ext4, FsKind::Ext4, entries);
records_test!(renames_tmpfs, inner_renames_tmpfs, FsKind::Tmpfs, renames);
records_test!(renames_ext4, inner_renames_ext4, FsKind::Ext4, renames);
records_test!(
    exchanges_tmpfs,
    inner_exchanges_tmpfs,
    FsKind::Tmpfs,
    exchanges
);
records_test!(
    exchanges_ext4,
    inner_exchanges_ext4,
    FsKind::Ext4,
    exchanges
);
records_test!(moves_tmpfs, inner_moves_tmpfs, FsKind::Tmpfs, moves);
records_test!(moves_ext4, inner_moves_ext4, FsKind::Ext4, moves);
records_test!(attrs_tmpfs, inner_attrs_tmpfs, FsKind::Tmpfs, attrs);
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
records_test!(attrs_ext4, inner_attrs_ext4, FsKind::Ext4, attrs);
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
records_test!(names_tmpfs, inner_names_tmpfs, FsKind::Tmpfs, names);
records_test!(names_ext4, inner_names_ext4, FsKind::Ext4, names);

/// The MARK `fs root watched`: an empty root, then (another log) a root
/// that already holds a file, a directory and a file in it.
fn mark_at_start(kind: FsKind, base: &Base, s: &Scratch) {
    let root_bytes = s.root().as_os_str().as_bytes().to_vec();
    let fsid = fsid(s.root());
    let root_id = live_id(fsid, s.root());
    let fsid_text = format!("{:08x}:{:08x}", fsid[0], fsid[1]);
    for (n, (entries, dirs)) in [("0", "1"), ("3", "2")].into_iter().enumerate() {
        let what = format!("{kind}: mark at start, {entries} entries");
        if n == 1 {
            touch(&s.root().join("f"));
            std::fs::create_dir(s.root().join("d")).expect("mkdir d");
            touch(&s.root().join("d/g"));
        }
        let mut sn = Session::start(
            &what,
            s,
            &base.mkdir(&format!("log-mark-{n}")),
            Duration::from_secs(1),
        );
        let rs = std::mem::take(&mut sn.started);
        let r = only(&what, &rs);
        // A MARK has no parent.
        assert!(r.parent.is_empty(), "{what}: {}", describe(r));
        assert_eq!(r.kind, RecordType::MARK, "{what}: {}", describe(r));
        assert_eq!(r.flags, 0, "{what}: {}", describe(r));
        assert_eq!(r.name, b"fs root watched", "{what}: {}", describe(r));
        assert_eq!(
            ObjectId::from_bytes(&r.target).as_ref(),
            Some(&root_id),
            "{what}: the target is the root's id: {}",
            describe(r)
        );
        let want: Vec<(&str, &[u8])> = vec![
            ("source", b"fs"),
            ("root", &root_bytes),
            ("fstype", kind.fstype().as_bytes()),
            ("mark", b"filesystem"),
            ("fsid", fsid_text.as_bytes()),
            ("entries", entries.as_bytes()),
            ("dirs", dirs.as_bytes()),
        ];
        let got: Vec<(&str, &[u8])> = r
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        assert_eq!(got, want, "{what}: fields of {}", describe(r));
        // The status agrees with the MARK.
        let st = &sn.tracker().roots()[0];
        assert_eq!(st.id, root_id.hex(), "{what}");
        assert_eq!(st.fsid, fsid_text, "{what}");
        assert_eq!(st.fstype, kind.fstype(), "{what}");
        assert_eq!(st.entries.to_string(), entries, "{what}");
        assert_eq!(st.dirs.to_string(), dirs, "{what}");
        if n == 0 {
            sn.finish();
        } else {
            // A root that held entries has no replay (it was never
            // described entry by entry): just stop.
            if let Some(t) = sn.tracker.take() {
                t.stop().expect("stop");
            }
        }
    }
}

/// CREAT, MKDIR, MKNOD, SLINK, HLINK, UNLNK, RMDIR.
fn entries(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: entries");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");

    // CREAT: a regular file in the root; its id is the live handle.
    let rs = sn.step(|sn| touch(&sn.path(b"f")));
    let f = sn.id(b"f");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::CREAT,
            flags: 0,
            target: &f,
            parent: &root,
            name: b"f",
            fields: &[("path", b"f")],
        },
    );

    // MKDIR, then a CREAT inside it: the path goes through it.
    let rs = sn.step(|sn| std::fs::create_dir(sn.path(b"d")).expect("mkdir"));
    let d = sn.id(b"d");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::MKDIR,
            flags: 0,
            target: &d,
            parent: &root,
            name: b"d",
            fields: &[("path", b"d")],
        },
    );
    let rs = sn.step(|sn| touch(&sn.path(b"d/g")));
    let g = sn.id(b"d/g");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::CREAT,
            flags: 0,
            target: &g,
            parent: &d,
            name: b"g",
            fields: &[("path", b"d/g")],
        },
    );

    // MKNOD, with the node's type.
    let nodes: [(&[u8], FileType, u64, &[u8]); 3] = [
        (b"fifo", FileType::Fifo, 0, b"fifo"),
        (
            b"null",
            FileType::CharacterDevice,
            rustix::fs::makedev(1, 3),
            b"char",
        ),
        (
            b"loopb",
            FileType::BlockDevice,
            rustix::fs::makedev(7, 0),
            b"block",
        ),
    ];
    for (name, ft, dev, ty) in nodes {
        let rel = join(b"d", name);
        let rs = sn.step(|sn| {
            rustix::fs::mknodat(CWD, sn.path(&rel), ft, Mode::from_raw_mode(0o600), dev)
                .unwrap_or_else(|e| panic!("mknod {}: {e}", show(&rel)))
        });
        let id = sn.id(&rel);
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::MKNOD,
                flags: 0,
                target: &id,
                parent: &d,
                name,
                fields: &[("path", &rel), ("type", ty)],
            },
        );
    }
    let rs = sn.step(|sn| {
        // Bound and closed: the socket's node stays.
        drop(std::os::unix::net::UnixListener::bind(sn.path(b"d/sock")).expect("bind"));
    });
    let sock = sn.id(b"d/sock");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::MKNOD,
            flags: 0,
            target: &sock,
            parent: &d,
            name: b"sock",
            fields: &[("path", b"d/sock"), ("type", b"socket")],
        },
    );

    // SLINK (a dangling one: the link is what is recorded, never its
    // target).
    let rs = sn.step(|sn| std::os::unix::fs::symlink("nowhere", sn.path(b"d/l")).expect("symlink"));
    let l = sn.id(b"d/l");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::SLINK,
            flags: 0,
            target: &l,
            parent: &d,
            name: b"l",
            fields: &[("path", b"d/l")],
        },
    );

    // HLINK: a second name of `f`, in another directory; the target is
    // `f`'s id.
    let rs = sn.step(|sn| std::fs::hard_link(sn.path(b"f"), sn.path(b"d/f2")).expect("link"));
    assert_eq!(sn.id(b"d/f2"), f, "a hard link has its file's handle");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::HLINK,
            flags: 0,
            target: &f,
            parent: &d,
            name: b"f2",
            fields: &[("path", b"d/f2")],
        },
    );

    // UNLNK: the first of two names without LAST, the last one with it.
    let rs = sn.step(|sn| std::fs::remove_file(sn.path(b"f")).expect("unlink"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::UNLNK,
            flags: 0,
            target: &f,
            parent: &root,
            name: b"f",
            fields: &[("path", b"f")],
        },
    );
    let rs = sn.step(|sn| std::fs::remove_file(sn.path(b"d/f2")).expect("unlink"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::UNLNK,
            flags: FLAG_LAST,
            target: &f,
            parent: &d,
            name: b"f2",
            fields: &[("path", b"d/f2")],
        },
    );
    // A node's and a symlink's removal are UNLNKs too.
    for (name, id) in [
        (&b"fifo"[..], None),
        (b"l", Some(&l)),
        (b"sock", Some(&sock)),
    ] {
        let rel = join(b"d", name);
        let id = id.cloned().unwrap_or_else(|| sn.id(&rel));
        let rs = sn.step(|sn| std::fs::remove_file(sn.path(&rel)).expect("unlink"));
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::UNLNK,
                flags: FLAG_LAST,
                target: &id,
                parent: &d,
                name,
                fields: &[("path", &rel)],
            },
        );
    }

    // RMDIR of an empty directory (its last name, as a directory's only
    // name always is).
    let rs = sn.step(|sn| std::fs::create_dir(sn.path(b"d/e")).expect("mkdir"));
    let e = sn.id(b"d/e");
    assert_eq!(only(&what, &rs).kind, RecordType::MKDIR, "{what}");
    let rs = sn.step(|sn| std::fs::remove_dir(sn.path(b"d/e")).expect("rmdir"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RMDIR,
            flags: FLAG_LAST,
            target: &e,
            parent: &d,
            name: b"e",
            fields: &[("path", b"d/e")],
        },
    );
    sn.finish();
}

/// RENME within a directory, across directories, of a directory, and over
/// an existing file (its last name and not). RENAME_EXCHANGE is
/// `exchanges`.
fn renames(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: renames");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let _ = sn.step(|sn| {
        for d in ["d1", "d2"] {
            std::fs::create_dir(sn.path(d.as_bytes())).expect("mkdir");
        }
        touch(&sn.path(b"d1/a"));
    });
    let (d1, d2) = (sn.id(b"d1"), sn.id(b"d2"));
    let a = sn.id(b"d1/a");
    let (h1, h2) = (d1.hex(), d2.hex());

    // Within a directory.
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d1/a"), sn.path(b"d1/b")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &d1,
            name: b"b",
            fields: &[
                ("path", b"d1/b"),
                ("sparent", h1.as_bytes()),
                ("sname", b"a"),
                ("spath", b"d1/a"),
            ],
        },
    );
    // Across directories, under another name; the id is the same.
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d1/b"), sn.path(b"d2/c")).expect("rename"));
    assert_eq!(sn.id(b"d2/c"), a, "{what}: a rename keeps the handle");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &d2,
            name: b"c",
            fields: &[
                ("path", b"d2/c"),
                ("sparent", h1.as_bytes()),
                ("sname", b"b"),
                ("spath", b"d1/b"),
            ],
        },
    );
    // A directory with contents: one record (`type=dir`), and what it
    // holds then has paths through its new name.
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d2"), sn.path(b"d1/d2m")).expect("rename"));
    let rh = root.hex();
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &d2,
            parent: &d1,
            name: b"d2m",
            fields: &[
                ("path", b"d1/d2m"),
                ("sparent", rh.as_bytes()),
                ("sname", b"d2"),
                ("spath", b"d2"),
                ("type", b"dir"),
            ],
        },
    );
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"d1/d2m/c"), sn.path(b"c")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &root,
            name: b"c",
            fields: &[
                ("path", b"c"),
                ("sparent", h2.as_bytes()),
                ("sname", b"c"),
                ("spath", b"d1/d2m/c"),
            ],
        },
    );

    // Over an existing file with one name: `overwritten` is its id and
    // `overwritten_last` is 1.
    let _ = sn.step(|sn| touch(&sn.path(b"victim")));
    let victim = sn.id(b"victim");
    let vh = victim.hex();
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"c"), sn.path(b"victim")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &root,
            name: b"victim",
            fields: &[
                ("path", b"victim"),
                ("sparent", rh.as_bytes()),
                ("sname", b"c"),
                ("spath", b"c"),
                ("overwritten", vh.as_bytes()),
                ("overwritten_last", b"1"),
            ],
        },
    );
    // Over a file that keeps another name: `overwritten_last` is 0.
    let _ = sn.step(|sn| {
        touch(&sn.path(b"two"));
        std::fs::hard_link(sn.path(b"two"), sn.path(b"d1/two-also")).expect("link");
    });
    let two = sn.id(b"two");
    let th = two.hex();
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"victim"), sn.path(b"two")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: 0,
            target: &a,
            parent: &root,
            name: b"two",
            fields: &[
                ("path", b"two"),
                ("sparent", rh.as_bytes()),
                ("sname", b"victim"),
                ("spath", b"victim"),
                ("overwritten", th.as_bytes()),
                ("overwritten_last", b"0"),
            ],
        },
    );

    sn.finish();
}

/// RENAME_EXCHANGE: one RENME flagged EXCHANGE, `exchanged` naming the
/// entry that went the other way; for two files in one directory, then a
/// directory and a file across directories; then thousands at once, since
/// an exchange is two rename events back to back and the second must be
/// taken as the first's mirror, never as a rename of its own, however the
/// tracker's reads fall.
fn exchanges(kind: FsKind, base: &Base, s: &Scratch) {
    const PAIRS: usize = 3000;
    let what = format!("{kind}: exchanges");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let rh = root.hex();
    let _ = sn.step(|sn| {
        touch(&sn.path(b"one"));
        touch(&sn.path(b"other"));
        std::fs::create_dir_all(sn.path(b"d1/dm")).expect("mkdir");
        touch(&sn.path(b"d1/dm/inside"));
    });
    let (one, other) = (sn.id(b"one"), sn.id(b"other"));
    let (d1, dm) = (sn.id(b"d1"), sn.id(b"d1/dm"));
    let (oh, h1, onh) = (other.hex(), d1.hex(), one.hex());

    let rs = sn.step(|sn| exchange(&sn.path(b"one"), &sn.path(b"other")));
    assert_eq!(
        (sn.id(b"one"), sn.id(b"other")),
        (other.clone(), one.clone()),
        "{what}: swapped"
    );
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_EXCHANGE,
            target: &one,
            parent: &root,
            name: b"other",
            fields: &[
                ("path", b"other"),
                ("sparent", rh.as_bytes()),
                ("sname", b"one"),
                ("spath", b"one"),
                ("exchanged", oh.as_bytes()),
            ],
        },
    );
    // Across directories, a directory with the file: the entry named
    // first is the directory (`type=dir`), and the file goes the other
    // way.
    let rs = sn.step(|sn| exchange(&sn.path(b"d1/dm"), &sn.path(b"other")));
    assert_eq!(
        (sn.id(b"d1/dm"), sn.id(b"other")),
        (one.clone(), dm.clone())
    );
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_EXCHANGE,
            target: &dm,
            parent: &root,
            name: b"other",
            fields: &[
                ("path", b"other"),
                ("sparent", h1.as_bytes()),
                ("sname", b"dm"),
                ("spath", b"d1/dm"),
                ("type", b"dir"),
                ("exchanged", onh.as_bytes()),
            ],
        },
    );

    // Many at once, of distinct pairs (so that the kernel merges none),
    // without a pause: the tracker's reads then fall anywhere in the
    // stream, between an exchange's two events too. Files in two
    // directories, and a directory with contents in every tenth pair.
    let _ = sn.step(|sn| {
        std::fs::create_dir(sn.path(b"xs")).expect("mkdir");
        std::fs::create_dir(sn.path(b"ys")).expect("mkdir");
        for i in 0..PAIRS {
            touch(&sn.path(format!("xs/{i}").as_bytes()));
            if i % 10 == 0 {
                std::fs::create_dir(sn.path(format!("ys/{i}").as_bytes())).expect("mkdir");
                touch(&sn.path(format!("ys/{i}/inside").as_bytes()));
            } else {
                touch(&sn.path(format!("ys/{i}").as_bytes()));
            }
        }
    });
    let ids: Vec<(ObjectId, ObjectId)> = (0..PAIRS)
        .map(|i| {
            (
                sn.id(format!("xs/{i}").as_bytes()),
                sn.id(format!("ys/{i}").as_bytes()),
            )
        })
        .collect();
    let rs = sn.step(|sn| {
        for i in 0..PAIRS {
            exchange(
                &sn.path(format!("xs/{i}").as_bytes()),
                &sn.path(format!("ys/{i}").as_bytes()),
            );
        }
    });
    // The replay is right whatever the records say (the ids are kept);
    // checked first, so that a failure below is about the records alone.
    sn.finish();
    // One RENME EXCHANGE per pair, and nothing else: a pair is wrong if
    // its records are anything but that one.
    let mut by_target: HashMap<ObjectId, Vec<&LogRecord>> = HashMap::new();
    for r in &rs {
        if let Some(t) = ObjectId::from_bytes(&r.target) {
            by_target.entry(t).or_default().push(r);
        }
    }
    let mut wrong: Vec<usize> = Vec::new();
    for (i, (x, y)) in ids.iter().enumerate() {
        let about: Vec<&LogRecord> = [x, y]
            .into_iter()
            .flat_map(|id| by_target.get(id).into_iter().flatten().copied())
            .collect();
        let ok = match about[..] {
            [r] => {
                r.kind == RecordType::RENME
                    && r.flags == FLAG_EXCHANGE
                    && ObjectId::from_bytes(&r.target).as_ref() == Some(x)
                    && r.field("exchanged") == Some(y.hex().as_bytes())
            }
            _ => false,
        };
        if !ok {
            wrong.push(i);
        }
    }
    let shown: Vec<String> = wrong
        .iter()
        .take(3)
        .map(|&i| {
            let name = i.to_string().into_bytes();
            let rs: Vec<LogRecord> = rs
                .iter()
                .filter(|r| r.name == name || r.field("sname") == Some(&name[..]))
                .cloned()
                .collect();
            format!("pair {i}:\n{}", describe_all(&rs))
        })
        .collect();
    assert!(
        wrong.is_empty() && rs.len() == PAIRS,
        "{what}: {PAIRS} exchanges gave {} records; {} pairs not one RENME EXCHANGE:\n{}",
        rs.len(),
        wrong.len(),
        shown.join("\n")
    );
}

fn exchange(a: &Path, b: &Path) {
    rustix::fs::renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE)
        .unwrap_or_else(|e| panic!("exchange {} {}: {e}", a.display(), b.display()));
}

/// RENME into the tree from outside it (`IN`; a directory's contents
/// follow flagged `COMPARE`) and out of it (`OUT`).
fn moves(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: moves");
    // Outside the root, on the same filesystem (the root's sibling).
    let outside = s.mount_point().join("outside");
    std::fs::create_dir(&outside).expect("mkdir outside");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let rh = root.hex();
    let out_id = live_id(sn.fsid, &outside);
    let outh = out_id.hex();

    // A file moved in.
    touch(&outside.join("fin"));
    let rs = sn.step(|sn| std::fs::rename(outside.join("fin"), sn.path(b"fin")).expect("rename"));
    let fin = sn.id(b"fin");
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_IN,
            target: &fin,
            parent: &root,
            name: b"fin",
            fields: &[
                ("path", b"fin"),
                ("sparent", outh.as_bytes()),
                ("sname", b"fin"),
                ("type", b"file"),
            ],
        },
    );

    // A directory with contents, made outside while watched (those
    // changes are outside the tree: no records), then moved in.
    let rs = sn.step(|_| {
        let m = outside.join("m");
        std::fs::create_dir_all(m.join("sub/deeper")).expect("mkdir");
        touch(&m.join("f"));
        touch(&m.join("sub/g"));
        std::os::unix::fs::symlink("f", m.join("sub/l")).expect("symlink");
    });
    assert!(
        rs.is_empty(),
        "{what}: records outside the tree:\n{}",
        describe_all(&rs)
    );
    let rs = sn.step(|sn| std::fs::rename(outside.join("m"), sn.path(b"m")).expect("rename"));
    let m = sn.id(b"m");
    assert!(!rs.is_empty(), "{what}: no record for a move in");
    check(
        &what,
        &rs[0],
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_IN,
            target: &m,
            parent: &root,
            name: b"m",
            fields: &[
                ("path", b"m"),
                ("sparent", outh.as_bytes()),
                ("sname", b"m"),
                ("type", b"dir"),
            ],
        },
    );
    // Its contents: each once, parents first, flagged COMPARE.
    let contents: [(&[u8], RecordType); 5] = [
        (b"m/f", RecordType::CREAT),
        (b"m/sub", RecordType::MKDIR),
        (b"m/sub/deeper", RecordType::MKDIR),
        (b"m/sub/g", RecordType::CREAT),
        (b"m/sub/l", RecordType::SLINK),
    ];
    assert_eq!(
        rs.len(),
        1 + contents.len(),
        "{what}: the move in and its contents:\n{}",
        describe_all(&rs)
    );
    for (rel, ty) in contents {
        let r = rs[1..]
            .iter()
            .find(|r| r.field("path") == Some(rel))
            .unwrap_or_else(|| {
                panic!("{what}: no record of {}:\n{}", show(rel), describe_all(&rs))
            });
        let (dir, name) = rel.split_at(rel.iter().rposition(|&b| b == b'/').expect("a slash"));
        let (parent, id) = (sn.id(dir), sn.id(rel));
        check(
            &what,
            r,
            &Want {
                kind: ty,
                flags: FLAG_COMPARE,
                target: &id,
                parent: &parent,
                name: &name[1..],
                fields: &[("path", rel)],
            },
        );
        // Parents first: a record's directory is the root's or came
        // before it.
        if dir != b"m" {
            let at = |p: &[u8]| rs.iter().position(|r| r.field("path") == Some(p));
            assert!(
                at(dir) < at(rel),
                "{what}: {} before its directory",
                show(rel)
            );
        }
    }

    // Moved out, under another name: `parent` is the directory outside,
    // and the record has no `path` (there is none in the tree).
    let rs = sn.step(|sn| std::fs::rename(sn.path(b"m"), outside.join("m-out")).expect("rename"));
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::RENME,
            flags: FLAG_OUT,
            target: &m,
            parent: &out_id,
            name: b"m-out",
            fields: &[
                ("sparent", rh.as_bytes()),
                ("sname", b"m"),
                ("spath", b"m"),
                ("type", b"dir"),
            ],
        },
    );
    // Changes inside it now are outside the tree.
    let rs = sn.step(|_| touch(&outside.join("m-out/sub/late")));
    assert!(
        rs.is_empty(),
        "{what}: records outside the tree:\n{}",
        describe_all(&rs)
    );
    sn.finish();
}

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

/// Names that are not UTF-8, hold newlines, or are 255 bytes long, as a
/// record's name, in `path` and `spath`, and as a directory on the way.
fn names(kind: FsKind, base: &Base, s: &Scratch) {
    let what = format!("{kind}: names");
    let mut sn = Session::start(&what, s, &base.mkdir("log"), Duration::from_secs(1));
    let root = sn.id(b"");
    let long = |c: u8| {
        let mut n = b"long-".to_vec();
        n.resize(255, c);
        n
    };
    let hostile: Vec<Vec<u8>> = vec![
        b"\xff\xfe-not-utf8".to_vec(),
        b"\xc3(".to_vec(),
        b"nl\nin the middle".to_vec(),
        b"trailing newline\n".to_vec(),
        b"\n".to_vec(),
        long(b'x'),
        [b"\x80".as_slice(), &long(b'y')[1..]].concat(),
    ];
    // A directory with a hostile name, holding them all.
    let dname = b"dir\nwith \xffnewline".to_vec();
    let rs = sn.step(|sn| std::fs::create_dir(sn.path(&dname)).expect("mkdir"));
    let d = sn.id(&dname);
    check(
        &what,
        only(&what, &rs),
        &Want {
            kind: RecordType::MKDIR,
            flags: 0,
            target: &d,
            parent: &root,
            name: &dname,
            fields: &[("path", &dname)],
        },
    );
    let dh = d.hex();
    for (i, n) in hostile.iter().enumerate() {
        let rel = join(&dname, n);
        let rs = sn.step(|sn| touch(&sn.path(&rel)));
        let id = sn.id(&rel);
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::CREAT,
                flags: 0,
                target: &id,
                parent: &d,
                name: n,
                fields: &[("path", &rel)],
            },
        );
        // Renamed to the root under another hostile name.
        let mut to = hostile[(i + 1) % hostile.len()].clone();
        to[0] = if to[0] == b'r' { b's' } else { b'r' };
        let rs = sn.step(|sn| std::fs::rename(sn.path(&rel), sn.path(&to)).expect("rename"));
        check(
            &what,
            only(&what, &rs),
            &Want {
                kind: RecordType::RENME,
                flags: 0,
                target: &id,
                parent: &root,
                name: &to,
                fields: &[
                    ("path", &to),
                    ("sparent", dh.as_bytes()),
                    ("sname", n),
                    ("spath", &rel),
                ],
            },
        );
    }
    // And the decoder gives them back: the replay (checked against the
    // live names by `finish`) holds every one.
    sn.finish();
}
