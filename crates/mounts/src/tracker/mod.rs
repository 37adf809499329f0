//! The tracker: a thread that keeps the table exact and logs each change.
//!
//! The handle ([`Tracker`]) shares the table with the thread behind a
//! read-write lock and talks to it over a channel plus an eventfd, so that
//! the thread sleeps in one `poll` on everything it waits for.

mod events;
mod worker;

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{EventfdFlags, eventfd};
use weir_log::Log;

use crate::backend::{self, Backend, BackendChoice};
use crate::change::Change;
use crate::model::Mount;
use crate::table::Table;
use crate::{Error, Result};

/// How a tracker runs.
#[derive(Clone, Debug)]
pub struct TrackerOptions {
    /// Which backend.
    pub backend: BackendChoice,
    /// The share of one core that whole-table readings may use: every
    /// reading under the mountinfo backend, and the comparisons that catch
    /// remounts under fanotify. Default 0.05 (5%).
    pub budget: f64,
    /// Under fanotify, a comparison waits until events have been quiet this
    /// long, so a storm is compared once at its end. Default 20 ms.
    pub quiet: Duration,
    /// The least time between two readings that a change (POLLPRI) asks
    /// for, so that a storm is read in batches rather than per change: each
    /// reading holds the kernel's namespace lock and slows the mounters.
    /// `sync()` does not wait for it. Default 50 ms.
    pub min_interval: Duration,
    /// The longest a known change waits for its reading, budget or not.
    /// Under fanotify, a storm that never pauses is compared this often.
    /// Default 5 s.
    pub max_delay: Duration,
    /// How often to compare the whole table even when nothing said it
    /// changed. Propagation changes (`mount --make-shared`) raise no
    /// notification at all, so only this audit and `sync()` see them.
    /// Default 30 s; `None` turns it off.
    pub audit_interval: Option<Duration>,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            backend: BackendChoice::Auto,
            budget: 0.05,
            quiet: Duration::from_millis(20),
            min_interval: Duration::from_millis(50),
            max_delay: Duration::from_secs(5),
            audit_interval: Some(Duration::from_secs(30)),
        }
    }
}

/// Called on the tracker's thread for every change, after it is in the
/// table and the log.
pub type OnChange = Box<dyn FnMut(&Change) + Send>;

/// Counters of a running tracker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackerStats {
    /// fanotify events read.
    pub events: u64,
    /// fanotify queue overflows (each followed by a full resynchronisation).
    pub overflows: u64,
    /// Whole-table readings and comparisons.
    pub readings: u64,
    /// Changes found (and records appended, with a log).
    pub changes: u64,
    /// CPU time of the tracker's thread, ns.
    pub cpu_ns: u64,
    /// CPU time of the whole-table readings alone, ns.
    pub reading_cpu_ns: u64,
}

#[derive(Default)]
pub(crate) struct SharedStats {
    events: AtomicU64,
    overflows: AtomicU64,
    readings: AtomicU64,
    changes: AtomicU64,
    cpu_ns: AtomicU64,
    reading_cpu_ns: AtomicU64,
}

impl SharedStats {
    fn snapshot(&self) -> TrackerStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TrackerStats {
            events: l(&self.events),
            overflows: l(&self.overflows),
            readings: l(&self.readings),
            changes: l(&self.changes),
            cpu_ns: l(&self.cpu_ns),
            reading_cpu_ns: l(&self.reading_cpu_ns),
        }
    }
}

pub(crate) enum Request {
    Sync(mpsc::Sender<Result<()>>),
    Stop,
}

/// A running tracker.
pub struct Tracker {
    backend: Backend,
    fallback: Option<Error>,
    table: Arc<RwLock<Table>>,
    stats: Arc<SharedStats>,
    requests: mpsc::Sender<Request>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Tracker {
    /// Reads the table and starts the thread that keeps it current. With a
    /// log, every change is appended to it; `on_change` sees each change.
    pub fn start(
        log: Option<Arc<Log>>,
        opts: TrackerOptions,
        on_change: Option<OnChange>,
    ) -> Result<Tracker> {
        let chosen = backend::choose(opts.backend)?;
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map_err(|e| worker::sys("eventfd", e))?,
        );
        let table = Arc::new(RwLock::new(Table::default()));
        let stats = Arc::new(SharedStats::default());
        let (tx, rx) = mpsc::channel();
        let backend = chosen.backend;
        let fallback = chosen.fallback;
        let mut w = worker::Worker::new(
            chosen.backend,
            chosen.watch,
            table.clone(),
            log,
            on_change,
            opts,
            stats.clone(),
            rx,
            wake.clone(),
        )?;
        w.initial_read()?;
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
            table,
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
        self.table
            .read()
            .map_or_else(|p| p.into_inner().to_sorted_vec(), |t| t.to_sorted_vec())
    }

    /// The number of mounts in the table.
    pub fn len(&self) -> usize {
        self.table
            .read()
            .map_or_else(|p| p.into_inner().len(), |t| t.len())
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
