//! A tracker's run over a scratch root, as the restart tests make them one
//! after another on one log (each opened afresh, as a new process would),
//! and the file operations they make on the root between them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use weir_fs::{Tracker, TrackerOptions};
use weir_log::{Log, LogRecord, Options, RecordType};

use super::journal::records_from;
use super::scratch::Scratch;

/// A tracker started on the log in a directory, and where its records
/// begin.
pub(crate) struct Run {
    pub(crate) log: Arc<Log>,
    pub(crate) tracker: Tracker,
    pub(crate) from: u64,
}

impl Run {
    /// Opens the log in `log_dir` and starts a tracker of `s`'s root with
    /// `opts` (its roots set to that one).
    pub(crate) fn start(s: &Scratch, log_dir: &Path, opts: TrackerOptions) -> Run {
        let log = Arc::new(Log::open(log_dir, Options::default()).expect("open the log"));
        let from = log.last_index() + 1;
        let opts = TrackerOptions {
            roots: vec![s.root().to_path_buf()],
            ..opts
        };
        let tracker = Tracker::start(Some(log.clone()), opts, None)
            .unwrap_or_else(|e| panic!("{}: starting the tracker: {e}", s.kind()));
        Run { log, tracker, from }
    }

    /// Syncs, and returns this run's records so far.
    pub(crate) fn records(&self) -> Vec<LogRecord> {
        self.tracker.sync().expect("sync");
        records_from(&self.log, self.from)
    }

    /// Stops the tracker and closes the log, as a process exit would.
    pub(crate) fn stop(self) {
        self.tracker.stop().expect("stop");
        let log = Arc::try_unwrap(self.log).unwrap_or_else(|_| panic!("the log is still shared"));
        log.close().expect("close the log");
    }
}

/// The names of the MARKs among `rs`.
pub(crate) fn marks(rs: &[LogRecord]) -> Vec<Vec<u8>> {
    rs.iter()
        .filter(|r| r.kind == RecordType::MARK)
        .map(|r| r.name.clone())
        .collect()
}

/// The path of `rel` under the root.
pub(crate) fn at(s: &Scratch, rel: &str) -> PathBuf {
    s.root().join(rel)
}

pub(crate) fn touch(s: &Scratch, rel: &str) {
    std::fs::File::create(at(s, rel)).unwrap_or_else(|e| panic!("create {rel}: {e}"));
}

pub(crate) fn mkdir(s: &Scratch, rel: &str) {
    std::fs::create_dir(at(s, rel)).unwrap_or_else(|e| panic!("mkdir {rel}: {e}"));
}

pub(crate) fn rename(s: &Scratch, from: &str, to: &str) {
    std::fs::rename(at(s, from), at(s, to)).unwrap_or_else(|e| panic!("rename {from} {to}: {e}"));
}
