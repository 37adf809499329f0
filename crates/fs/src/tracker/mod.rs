//! The tracker: a thread that keeps each watched root's tree as logged and
//! logs every change to it.
//!
//! [`Tracker::start`] marks each root's filesystem (one mark per
//! filesystem, however many roots it holds) and returns: from then on the
//! kernel queues every change. Each root is walked into its tree and gets
//! a MARK, in `start` for a small tree and in the thread for a big one
//! (`start`'s module), before the thread logs the changes queued. With
//! `resume`, a root watched before is compared with the log's last
//! description of it instead, and what changed while nothing watched is
//! logged flagged `RECONCILED`.
//!
//! [`Tracker::sync`] is the barrier: a cookie file made and removed in
//! each root puts a marker in the kernel's queue; once the thread has read
//! every root's marker, every change made before the call has been read,
//! and its records are durable when `sync` returns.
//!
//! [`Tracker::rescan`] compares a root with the live tree on demand
//! (`rescan_now`'s module).

mod content;
mod end;
mod events;
mod mark;
pub(crate) mod progress;
mod rescan_now;
mod root;
mod sink;
mod start;
mod touches;
mod verify;
mod worker;

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, eventfd};
use weir_log::Log;
use weir_sys::fanotify::fid::{AT_EMPTY_PATH, FidGroup, name_to_handle_at};

use crate::checkpoint;
use crate::id::ObjectId;
use crate::{Error, Result};

pub use mark::MarkKind;
pub use progress::{Phase, Progress};
pub use rescan_now::{RESCANNED, Rescanned};
pub use root::{COOKIE_PREFIX, is_cookie};
pub use sink::OnChange;

use self::progress::ProgressCell;
use self::root::Root;
use self::worker::Worker;

/// How a tracker runs.
#[derive(Clone, Debug)]
pub struct TrackerOptions {
    /// The directories to watch. They may share filesystems (they then
    /// share its mark) but may not overlap.
    pub roots: Vec<PathBuf>,
    /// A file written and kept open gets an MTIME at most this often; one
    /// closed after writing gets it at the close. Default 1 s.
    pub mtime_interval: Duration,
    /// In a storm (reads under 10 ms apart), how long events gather
    /// before the next read. Default 1 ms.
    pub batch: Duration,
    /// Whether a root watched before is compared with the log's last
    /// description of it, logging what changed meanwhile (`RECONCILED`).
    /// Default `true`.
    pub resume: bool,
    /// The file of the trees' persistent copy (with a log): a restart
    /// starts from it and the log's records after it, whatever a root held
    /// when it was first watched. `None` keeps none: a restart then starts
    /// from the log alone, which describes only roots first watched empty.
    pub index: Option<PathBuf>,
    /// Whether a restart from the persistent copy is content-exact: every
    /// directory is read and every file looked at, and those written or
    /// with attributes set while nothing watched get an `MTIME` or
    /// `SATTR` (`RECONCILED`). Default `false`: namespace-exact, reading
    /// only the directories whose times moved.
    pub content: bool,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            roots: Vec::new(),
            mtime_interval: Duration::from_secs(1),
            batch: Duration::from_millis(1),
            resume: true,
            index: None,
            content: false,
        }
    }
}

/// One watched root, as `weir fs` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RootStatus {
    /// The root's path.
    pub path: PathBuf,
    /// Its id, in hex.
    pub id: String,
    /// The filesystem type.
    pub fstype: String,
    /// How its filesystem is marked.
    pub mark: MarkKind,
    /// The fsid its events carry, `val[0]:val[1]` in hex.
    pub fsid: String,
    /// Entries in the tree (while it is first read, those read so far).
    pub entries: u64,
    /// Whether it is read, watched, or no longer watched.
    pub state: RootState,
    /// Directories in the tree.
    pub dirs: u64,
    /// Events that concerned the root.
    pub events: u64,
    /// Records logged for it.
    pub records: u64,
    /// Records decided by a look at the live entry (`VERIFIED`).
    pub verified: u64,
    /// Events about the rest of its filesystem, ignored.
    pub outside: u64,
    /// Comparisons with a walk.
    pub compares: u64,
    /// Files written and waiting for their MTIME.
    pub dirty: u64,
    /// Its long work (the first reading, a reconciliation, a rescan) as
    /// far as it has gone; `None` when there is none.
    pub progress: Option<Progress>,
}

/// Where a root's watch stands.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootState {
    /// Its tree is being read for the first time: its changes wait in the
    /// kernel's queue and are logged once it is read.
    Reading,
    /// Watched: every change is logged.
    Watching,
    /// The root directory was removed (MARK `fs root removed`): nothing
    /// more is logged for it.
    Removed,
    /// The root directory was moved (MARK `fs root moved`), to `to` when
    /// its new path could be read: nothing more is logged for it, since
    /// the path watched is no longer this tree.
    Moved {
        /// Where it went.
        to: Option<PathBuf>,
    },
}

impl RootState {
    /// Its name as `weir fs` shows it.
    pub fn name(&self) -> &'static str {
        match self {
            RootState::Reading => "reading",
            RootState::Watching => "watching",
            RootState::Removed => "removed",
            RootState::Moved { .. } => "moved",
        }
    }
}

/// The tracker's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrackerStats {
    /// `read(2)`s that returned events.
    pub reads: u64,
    /// Events read.
    pub events: u64,
    /// Records logged.
    pub records: u64,
    /// Queue overflows (each followed by a comparison).
    pub overflows: u64,
    /// Events dropped while a comparison was due.
    pub dropped: u64,
    /// Sync rounds.
    pub syncs: u64,
    /// Events queued by the kernel and not yet read, when last looked
    /// at (the roots share one queue).
    pub backlog: u64,
    /// Checkpoints of the trees' persistent copy committed.
    pub checkpoints: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) stats: worker::Stats,
    pub(crate) records: u64,
    pub(crate) backlog: u64,
    pub(crate) checkpoints: u64,
    pub(crate) roots: Vec<RootStatus>,
    /// Each root's progress, read live (see [`progress`]).
    pub(crate) progress: Vec<Arc<ProgressCell>>,
}

pub(crate) enum Request {
    Sync(mpsc::Sender<Result<()>>),
    Rescan(PathBuf, mpsc::Sender<Result<Rescanned>>),
    Stop(mpsc::Sender<Result<()>>),
}

/// A running tracker.
pub struct Tracker {
    requests: mpsc::Sender<Request>,
    wake: Arc<OwnedFd>,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Tracker {
    /// Marks every root, starts reading them (what a budget of a few
    /// milliseconds does not read, the thread reads before anything
    /// else), and starts the thread: from its return no change is missed.
    /// With a log, every change is appended to it; `on_change` sees each
    /// one.
    pub fn start(
        log: Option<Arc<Log>>,
        opts: TrackerOptions,
        on_change: Option<OnChange>,
    ) -> Result<Tracker> {
        let roots = canonical_roots(&opts.roots)?;
        let group = FidGroup::open().map_err(Error::Kernel)?;
        let opened = match (&opts.index, &log) {
            (Some(path), Some(log)) => checkpoint::open(path, log)?,
            _ => None,
        };
        let mut sink = sink::Sink::new(log.clone(), on_change);
        let mut watched = Vec::with_capacity(roots.len());
        for path in &roots {
            let m = mark::mark(&group, path)?;
            let (h, _) = name_to_handle_at(m.fd.as_fd(), c"", AT_EMPTY_PATH).map_err(|source| {
                Error::Root {
                    path: path.clone(),
                    what: "taking the root's file handle",
                    source,
                }
            })?;
            let id = ObjectId::from_handle(m.fsid, &h);
            let mut root = Root::new(m, id);
            root.begin_reading(opts.resume, opts.content)?;
            watched.push(root);
        }
        let mut checkpoints = match (&opened, &log) {
            (Some(o), Some(log)) => {
                let infos = watched
                    .iter()
                    .map(|r| checkpoint::RootInfo::new(r.path.clone(), r.id.clone()))
                    .collect();
                Some(checkpoint::Checkpoints::start(
                    o.clone(),
                    log.clone(),
                    infos,
                )?)
            }
            _ => None,
        };
        // Small trees are read here, so their MARKs are logged before the
        // tracker says it runs; the rest is read by the thread.
        let until = Instant::now() + start::START_BUDGET;
        for (i, root) in watched.iter_mut().enumerate() {
            if root.read_on(until, &mut sink, opened.as_ref(), true)?
                && let Some(c) = checkpoints.as_mut()
            {
                c.started(i, root.copy);
            }
        }
        // What the start logged (the MARKs, a restart's reconciliation) is
        // durable before the tracker says it runs.
        if let (Some(log), Some(a)) = (&log, sink.last) {
            log.wait_durable(a)?;
        }
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).map_err(|errno| {
                Error::Sys(weir_sys::Error::Syscall {
                    call: "eventfd",
                    errno,
                })
            })?,
        );
        let shared = Arc::new(Mutex::new(Shared {
            progress: watched.iter().map(|r| r.progress.clone()).collect(),
            ..Shared::default()
        }));
        let (tx, rx) = mpsc::channel();
        let w = Worker::new(
            group,
            watched,
            sink,
            worker::Link {
                requests: rx,
                wake: wake.clone(),
                shared: shared.clone(),
            },
            (opts.mtime_interval, opts.batch),
            opened.zip(checkpoints.take()),
        );
        w.publish();
        let thread = std::thread::Builder::new()
            .name("weir-fs".into())
            .spawn(move || w.run())
            .map_err(Error::Thread)?;
        Ok(Tracker {
            requests: tx,
            wake,
            shared,
            thread: Some(thread),
        })
    }

    /// The barrier: returns once every change made to a watched tree
    /// before the call is in the log, durably.
    pub fn sync(&self) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.send(Request::Sync(tx))?;
        rx.recv().map_err(|_| Error::Stopped)?
    }

    /// Compares the watched root `root` with the live tree now, reading
    /// only the directories whose times moved or are not known, and logs
    /// each difference flagged `COMPARE`, then the MARK `fs tree
    /// rescanned`. Returns once they are appended (not yet durable). The
    /// thread reads no event meanwhile: they wait in the kernel's queue.
    pub fn rescan(&self, root: &std::path::Path) -> Result<Rescanned> {
        // Roots are kept absolute and without symlinks.
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let (tx, rx) = mpsc::channel();
        self.send(Request::Rescan(root, tx))?;
        rx.recv().map_err(|_| Error::Stopped)?
    }

    /// Each root's status, its progress as it is now.
    pub fn roots(&self) -> Vec<RootStatus> {
        self.read(|s| {
            let mut roots = s.roots.clone();
            for (r, p) in roots.iter_mut().zip(&s.progress) {
                r.progress = p.get();
            }
            roots
        })
    }

    /// Counters.
    pub fn stats(&self) -> TrackerStats {
        self.read(|s| TrackerStats {
            reads: s.stats.reads,
            events: s.stats.events,
            records: s.records,
            overflows: s.stats.overflows,
            dropped: s.stats.dropped,
            syncs: s.stats.syncs,
            backlog: s.backlog,
            checkpoints: s.checkpoints,
        })
    }

    /// Whether the thread has ended on its own (an error `stop` returns).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Logs what happened before the call (as `sync`), then stops the
    /// thread and returns its outcome.
    pub fn stop(mut self) -> Result<()> {
        self.shutdown()
    }

    fn read<T>(&self, f: impl FnOnce(&Shared) -> T) -> T {
        match self.shared.lock() {
            Ok(s) => f(&s),
            Err(p) => f(&p.into_inner()),
        }
    }

    fn send(&self, r: Request) -> Result<()> {
        self.requests.send(r).map_err(|_| Error::Stopped)?;
        rustix::io::write(&*self.wake, &1u64.to_ne_bytes()).map_err(|errno| {
            Error::Sys(weir_sys::Error::Syscall {
                call: "write(eventfd)",
                errno,
            })
        })?;
        Ok(())
    }

    fn shutdown(&mut self) -> Result<()> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        let (tx, rx) = mpsc::channel();
        let sent = self.send(Request::Stop(tx)).is_ok();
        let last = if sent {
            rx.recv().unwrap_or(Ok(()))
        } else {
            Ok(())
        };
        let ended = t.join().unwrap_or(Err(Error::Stopped));
        ended.and(last)
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!(error = %e, "filesystem tracker ended with an error");
        }
    }
}

/// The roots as absolute, symlink-free paths, refused if they overlap.
fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(roots.len());
    for r in roots {
        let c = std::fs::canonicalize(r).map_err(|e| Error::Root {
            path: r.clone(),
            what: "resolving the root",
            source: weir_sys::Error::Syscall {
                call: "realpath",
                errno: rustix::io::Errno::from_io_error(&e).unwrap_or(rustix::io::Errno::INVAL),
            },
        })?;
        for o in &out {
            if c.starts_with(o) || o.starts_with(&c) {
                let (inner, outer) = if c.starts_with(o) {
                    (c.clone(), o.clone())
                } else {
                    (o.clone(), c.clone())
                };
                return Err(Error::Overlap { inner, outer });
            }
        }
        out.push(c);
    }
    Ok(out)
}

impl Root {
    pub(crate) fn status(&self) -> RootStatus {
        RootStatus {
            path: self.path.clone(),
            id: self.id_hex.clone(),
            fstype: self.fstype.clone(),
            mark: self.mark,
            fsid: self.fsid_text.clone(),
            entries: self.read_so_far().unwrap_or(self.tree.len() as u64),
            state: match &self.ended {
                Some(s) => s.clone(),
                None if self.is_reading() => RootState::Reading,
                None => RootState::Watching,
            },
            dirs: self.tree.dir_count() as u64,
            events: self.counters.events,
            records: self.counters.records,
            verified: self.counters.verified,
            outside: self.counters.outside,
            compares: self.counters.compares,
            dirty: self.dirty.len() as u64,
            progress: self.progress.get(),
        }
    }
}
