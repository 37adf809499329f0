//! The tracker: a thread that keeps the table exact and logs each change.
//!
//! The handle ([`Tracker`]) shares the table with the thread behind a
//! read-write lock and talks to it over a channel plus an eventfd, so that
//! the thread sleeps in one `poll` on everything it waits for.
//!
//! The thread appends each change's record while it still holds the write
//! lock it applied the change under, and keeps the index of the last one
//! next to the table: a [`Tracker::checkpoint`] is then always a table and
//! exactly the records that made it.

mod emit;
mod events;
mod restart;
mod stats;
mod worker;

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{EventfdFlags, eventfd};
use weir_log::Log;

use crate::backend::{self, Backend, BackendChoice};
use crate::change::Change;
use crate::model::Mount;
use crate::previous::Previous;
use crate::table::Table;
use crate::{Error, Result};

use self::stats::SharedStats;
pub use self::stats::TrackerStats;

/// How a tracker runs.
#[derive(Clone, Debug)]
pub struct TrackerOptions {
    /// Which backend.
    pub backend: BackendChoice,
    /// The share of one core that whole-table readings may use: every
    /// reading under the mountinfo backend, and the comparisons that catch
    /// remounts under fanotify. Default 0.05 (5%).
    pub budget: f64,
    /// A storm is compared once at its pause: under fanotify a comparison
    /// waits until events have been quiet this long; under mountinfo, a
    /// change that comes within `min_interval` of the last reading waits
    /// until POLLPRI has been quiet this long (a lone change is read at
    /// once). Default 20 ms.
    pub quiet: Duration,
    /// The least time between two readings that a change (POLLPRI) asks
    /// for, so that a storm is read in batches rather than per change: each
    /// reading holds the kernel's namespace lock and slows the mounters.
    /// `sync()` does not wait for it. Default 50 ms.
    pub min_interval: Duration,
    /// Under fanotify, how long events may gather in a storm before the
    /// tracker reads them. A lone event is read at once; once events come
    /// less than twice this apart, each read waits until this long after
    /// the previous one, so a storm of mount(8) processes wakes the tracker
    /// once per few mounts instead of once per mount (each wakeup costs
    /// more than the event's own work). `sync()` does not wait for it.
    /// Default 5 ms; zero reads every event at once.
    pub batch: Duration,
    /// The longest a known change waits for its reading, budget or not.
    /// Under fanotify, a storm that never pauses is compared this often.
    /// Default 5 s.
    pub max_delay: Duration,
    /// How often to compare the whole table even when nothing said it
    /// changed. Propagation changes (`mount --make-shared`) raise no
    /// notification at all, so only this audit and `sync()` see them.
    /// Default 30 s; `None` turns it off.
    pub audit_interval: Option<Duration>,
    /// The table as last logged by an earlier tracker (a checkpoint). When
    /// set, the start replays the log's MOUNT_* records after its
    /// `log_index`, compares the result with a fresh reading and logs every
    /// difference flagged `COMPARE | weir_log::FLAG_RECONCILED`, then a
    /// `mount table reconciled` MARK instead of `mount table read`
    /// (docs/records.md). Default `None`.
    pub previous: Option<Previous>,
    /// Whether `previous` was taken in this boot (the caller compares
    /// /proc/sys/kernel/random/boot_id). Across a boot mount ids start over
    /// and mean nothing: every previous mount is then logged as detached and
    /// every live one as attached. Default `true`.
    pub same_boot: bool,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            backend: BackendChoice::Auto,
            budget: 0.05,
            quiet: Duration::from_millis(20),
            min_interval: Duration::from_millis(50),
            batch: Duration::from_millis(5),
            max_delay: Duration::from_secs(5),
            audit_interval: Some(Duration::from_secs(30)),
            previous: None,
            same_boot: true,
        }
    }
}

/// Called on the tracker's thread for every change, after it is in the
/// table and the log.
pub type OnChange = Box<dyn FnMut(&Change) + Send>;

/// What the handle and the thread share: the table, and the index of the
/// last record appended for it, under one lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) table: Table,
    /// The index of the last record the tracker appended (0: none yet, or
    /// no log).
    pub(crate) log_index: u64,
}

pub(crate) enum Request {
    Sync(mpsc::Sender<Result<()>>),
    Stop,
}

/// A running tracker.
pub struct Tracker {
    backend: Backend,
    fallback: Option<Error>,
    state: Arc<RwLock<State>>,
    stats: Arc<SharedStats>,
    requests: mpsc::Sender<Request>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Tracker {
    /// Reads the table and starts the thread that keeps it current. With a
    /// log, every change is appended to it; `on_change` sees each change.
    ///
    /// With `opts.previous`, the changes since that table was logged are
    /// found and logged before this returns, ahead of any event (fanotify
    /// queues the events meanwhile). A log that cannot be read back is an
    /// error ([`Error::Log`]); the caller may start again without
    /// `previous`.
    pub fn start(
        log: Option<Arc<Log>>,
        mut opts: TrackerOptions,
        on_change: Option<OnChange>,
    ) -> Result<Tracker> {
        let previous = opts.previous.take();
        let chosen = backend::choose(opts.backend)?;
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map_err(|e| worker::sys("eventfd", e))?,
        );
        let state = Arc::new(RwLock::new(State::default()));
        let stats = Arc::new(SharedStats::default());
        let (tx, rx) = mpsc::channel();
        let backend = chosen.backend;
        let fallback = chosen.fallback;
        let mut w = worker::Worker::new(
            chosen.backend,
            chosen.watch,
            state.clone(),
            log,
            on_change,
            opts,
            stats.clone(),
            rx,
            wake.clone(),
        )?;
        match previous {
            Some(p) => w.initial_reconcile(p)?,
            None => w.initial_read()?,
        }
        let thread = std::thread::Builder::new()
            .name("weir-mounts".into())
            .spawn(move || w.run())
            .map_err(|source| Error::Io {
                what: "starting the mount tracker thread",
                source,
            })?;
        Ok(Tracker {
            backend,
            fallback,
            state,
            stats,
            requests: tx,
            wake,
            thread: Some(thread),
        })
    }

    /// The backend in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Why fanotify is not in use, when `auto` fell back to mountinfo.
    pub fn fallback_reason(&self) -> Option<&Error> {
        self.fallback.as_ref()
    }

    /// The barrier: returns once every mount change that completed before
    /// the call is in the table and durable in the log.
    ///
    /// It drains the fanotify queue and then compares the whole table with
    /// a fresh reading, bypassing the budget once: remounts and, worse,
    /// propagation changes raise no fanotify event, and propagation changes
    /// not even a POLLPRI, so only a comparison can promise them.
    pub fn sync(&self) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.send(Request::Sync(tx))?;
        rx.recv().map_err(|_| Error::Stopped)?
    }

    /// A copy of the table, sorted by id.
    pub fn mounts(&self) -> Vec<Mount> {
        self.read(|s| s.table.to_sorted_vec())
    }

    /// The table and the index of the last record appended for it, read
    /// under one lock: every record up to `log_index` is in `mounts`, and
    /// no change of `mounts` has a record after it. Without a log,
    /// `log_index` is 0. See [`Previous`] for when to write it to disk.
    pub fn checkpoint(&self) -> Previous {
        self.read(|s| Previous {
            mounts: s.table.to_sorted_vec(),
            log_index: s.log_index,
        })
    }

    /// A number that grows with every change applied to the table (and
    /// the first reading): equal generations mean an equal table, so a
    /// rendering of [`Tracker::mounts`] can be cached by it. It is bumped
    /// under the table's lock, so read it before the table: a rendering is
    /// at least as new as the generation read before it.
    pub fn generation(&self) -> u64 {
        self.stats.generation.load(Ordering::Acquire)
    }

    /// The number of mounts in the table.
    pub fn len(&self) -> usize {
        self.read(|s| s.table.len())
    }

    fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        match self.state.read() {
            Ok(s) => f(&s),
            Err(p) => f(&p.into_inner()),
        }
    }

    /// Whether the table is empty (it never is on a running system).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counters.
    pub fn stats(&self) -> TrackerStats {
        self.stats.snapshot()
    }

    /// Whether the thread has ended on its own: an error it could not
    /// recover from, which `stop` returns.
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops the thread and returns its outcome.
    pub fn stop(mut self) -> Result<()> {
        self.shutdown()
    }

    fn send(&self, r: Request) -> Result<()> {
        self.requests.send(r).map_err(|_| Error::Stopped)?;
        rustix::io::write(&*self.wake, &1u64.to_ne_bytes())
            .map_err(|e| worker::sys("write(eventfd)", e))?;
        Ok(())
    }

    fn shutdown(&mut self) -> Result<()> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        // The thread may be gone already (an error); join tells.
        let _ = self.send(Request::Stop);
        t.join().unwrap_or(Err(Error::Stopped))
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::warn!(error = %e, "mount tracker ended with an error");
        }
    }
}
