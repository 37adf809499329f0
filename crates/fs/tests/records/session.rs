//! What every records test shares: a tracker on a scratch root read back
//! step by step, the record a step must give, and the macro that runs a
//! test in a private mount namespace.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::support::journal::{
    assert_replay_is_live, describe, describe_all, fsid, live_id, open_log,
};
use crate::support::scratch::{FsKind, Scratch, scratch};
use crate::support::tree::show;
use crate::support::{self, Base};
use weir_fs::ObjectId;
use weir_fs::{Tracker, TrackerOptions};
use weir_log::{Log, LogRecord, RecordType};

/// One tracker on a scratch root, read back step by step.
pub(crate) struct Session<'a> {
    pub(crate) what: String,
    pub(crate) root: &'a Path,
    pub(crate) fsid: [u32; 2],
    pub(crate) log: Arc<Log>,
    pub(crate) tracker: Option<Tracker>,
    /// The first log index not yet returned by [`Session::records`].
    pub(crate) next: u64,
    /// What the start logged (made readable by a sync).
    pub(crate) started: Vec<LogRecord>,
}

impl<'a> Session<'a> {
    /// Starts a tracker on `s`'s root, logging to `log_dir`, with files
    /// kept open getting an MTIME every `mtime_interval`.
    pub(crate) fn start(
        what: &str,
        s: &'a Scratch,
        log_dir: &Path,
        mtime_interval: Duration,
    ) -> Session<'a> {
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

    pub(crate) fn tracker(&self) -> &Tracker {
        self.tracker.as_ref().expect("running")
    }

    /// The records appended since the last call.
    pub(crate) fn records(&mut self) -> Vec<LogRecord> {
        let rs = support::journal::records_from(&self.log, self.next);
        if let Some(r) = rs.last() {
            self.next = r.index + 1;
        }
        rs
    }

    /// Runs `op` (given the session, for its paths), syncs, and returns
    /// the records it caused.
    pub(crate) fn step(&mut self, op: impl FnOnce(&Session<'a>)) -> Vec<LogRecord> {
        op(self);
        self.tracker()
            .sync()
            .unwrap_or_else(|e| panic!("{}: sync: {e}", self.what));
        self.records()
    }

    /// The absolute path of `rel` (raw bytes, relative to the root).
    pub(crate) fn path(&self, rel: &[u8]) -> PathBuf {
        if rel.is_empty() {
            return self.root.to_path_buf();
        }
        self.root.join(OsStr::from_bytes(rel))
    }

    /// The live id of `rel`.
    pub(crate) fn id(&self, rel: &[u8]) -> ObjectId {
        live_id(self.fsid, &self.path(rel))
    }

    /// Stops the tracker, and checks that the whole log replays to the
    /// live tree.
    pub(crate) fn finish(mut self) {
        if let Some(t) = self.tracker.take() {
            t.stop()
                .unwrap_or_else(|e| panic!("{}: stop: {e}", self.what));
        }
        assert_replay_is_live(&self.log, self.root, &self.what);
    }
}

/// What one record must be: its type, flags, target, parent, name, and
/// exactly these fields (in any order).
pub(crate) struct Want<'a> {
    pub(crate) kind: RecordType,
    pub(crate) flags: u16,
    pub(crate) target: &'a ObjectId,
    pub(crate) parent: &'a ObjectId,
    pub(crate) name: &'a [u8],
    pub(crate) fields: &'a [(&'a str, &'a [u8])],
}

pub(crate) fn check(what: &str, r: &LogRecord, w: &Want<'_>) {
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
pub(crate) fn only<'r>(what: &str, rs: &'r [LogRecord]) -> &'r LogRecord {
    assert_eq!(
        rs.len(),
        1,
        "{what}: expected one record, got:\n{}",
        describe_all(rs)
    );
    &rs[0]
}

/// `a/b` as bytes.
pub(crate) fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    support::tree::join(a, b)
}

pub(crate) fn touch(p: &Path) {
    std::fs::File::create(p).unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
}

/// Makes a scratch of `kind` with a log directory and runs `body`.
pub(crate) fn on(kind: FsKind, body: fn(FsKind, &Base, &Scratch)) {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(kind, base.path()) else {
        return;
    };
    body(kind, &base, &s);
}

/// A test of `$body` on `$kind`: `$outer` runs `$inner` in a private mount
/// namespace.
macro_rules! records_test {
    ($outer:ident, $inner:ident, $kind:expr, $body:path) => {
        #[test]
        fn $outer() {
            let full = concat!(module_path!(), "::", stringify!($inner));
            // The harness names a test by its path below the crate.
            let name = full.split_once("::").map_or(full, |(_, rest)| rest);
            $crate::support::run_in_private_ns(name);
        }

        $crate::session::records_test!(@inner $inner, $kind, $body);
    };
    (@inner $inner:ident, $kind:expr, $body:path) => {
        #[test]
        #[ignore = "run by its outer test in a private mount namespace"]
        fn $inner() {
            $crate::session::on($kind, $body);
        }
    };
}
pub(crate) use records_test;
