//! The device tracker: a thread that keeps the [`Inventory`] exact from
//! kernel uevents and logs each change.
//!
//! The uevent socket is opened *before* the first scan, so an event that
//! races the scan is queued rather than lost; applying it again later is
//! harmless, since every event re-reads the device's current state. The
//! device nodes are watched for writes (`watch`) before the scan too, for
//! the same reason: a metadata write during the scan is probed after it.
//!
//! The handle shares the inventory behind a read-write lock and talks to
//! the thread over a channel plus an eventfd, so the thread sleeps in one
//! `poll` on the socket and its requests. The thread appends each change's
//! record while it holds the lock, so a [`Tracker::checkpoint`] is the
//! state exactly as of the last record logged.
//!
//! Started with a [`Previous`] state, it logs what changed while no
//! tracker was watching before it takes any uevent (`reconcile`).

mod activation;
pub(crate) mod reconcile;
mod stats;
mod watch;
mod worker;

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{EventfdFlags, eventfd};
use weir_log::Log;
use weir_sys::uevent::{Groups, UeventSocket};

use crate::change::Change;
use crate::filter::Filter;
use crate::inventory::Inventory;
use crate::previous::Previous;
use crate::previous::current::Current;
use crate::sysfs::Sysfs;
use crate::{Error, Result};
use stats::SharedStats;

pub use stats::TrackerStats;

/// How a tracker runs.
#[derive(Clone, Debug)]
pub struct TrackerOptions {
    /// The sysfs tree (`/sys`).
    pub sysfs: Sysfs,
    /// Which devices are probed.
    pub filter: Filter,
    /// Run after each VG_COMPLETE as `argv[0] argv[1..] VGNAME`.
    pub on_vg_complete: Option<Vec<String>>,
    /// Which uevents to take: `None` picks udev's when udevd runs (its
    /// events come once /dev is ready), else the kernel's.
    pub groups: Option<Groups>,
    /// How long `sync` waits for the uevents the kernel has already sent
    /// before it re-reads every device instead. Default 2 s.
    pub sync_timeout: Duration,
    /// The state a previous tracker last logged (its
    /// [`Tracker::checkpoint`]): the start then logs only the differences,
    /// flagged `RECONCILED`, instead of a VG_COMPLETE for every complete VG.
    pub previous: Option<Previous>,
    /// At most this many device nodes are watched for writes; those past
    /// it are polled, as past the `fs.inotify.max_user_watches` limit.
    /// `None`: as many as the system allows.
    pub max_watches: Option<usize>,
    /// Whether a synthesized `change` uevent right after a write echoes
    /// it (udevd's `watch` option), so that it needs no probe. `None`:
    /// when udevd runs.
    pub udev_echoes: Option<bool>,
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            sysfs: Sysfs::default(),
            filter: Filter::accept_all(),
            on_vg_complete: None,
            groups: None,
            sync_timeout: Duration::from_secs(2),
            previous: None,
            max_watches: None,
            udev_echoes: None,
        }
    }
}

/// Called on the tracker's thread for every change, after it is in the
/// inventory and the log.
pub type OnChange = Box<dyn FnMut(&Change) + Send>;

/// The inventory and the index of the last record the tracker appended
/// about it, under one lock.
pub(super) struct Shared {
    pub(super) inv: Inventory,
    pub(super) last_index: u64,
}

enum Request {
    Sync(mpsc::Sender<Result<()>>),
    Stop,
}

/// A running device tracker.
pub struct Tracker {
    groups: Groups,
    state: Arc<RwLock<Shared>>,
    stats: Arc<SharedStats>,
    requests: mpsc::Sender<Request>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Tracker {
    /// Subscribes to uevents, reads every device, logs the start (a MARK,
    /// then the VGs already complete, or with `opts.previous` the
    /// differences from it and a second MARK) and starts the thread that
    /// keeps the inventory current. The start's records are in the log
    /// when it returns.
    pub fn start(
        log: Option<Arc<Log>>,
        mut opts: TrackerOptions,
        on_change: Option<OnChange>,
    ) -> Result<Tracker> {
        let previous = opts.previous.take();
        let groups = opts.groups.unwrap_or_else(default_groups);
        // Read before the socket opens and the scan starts: the scan
        // covers every event up to it, so `sync` need not wait for one.
        let seqnum = worker::read_uevent_seqnum().unwrap_or(0);
        let socket = UeventSocket::open(groups)?;
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map_err(|e| worker::sys("eventfd", e))?,
        );
        let echoes = opts.udev_echoes.unwrap_or_else(udevd_runs);
        let mut watches = watch::Watches::open(echoes, opts.max_watches);
        watches.prewatch(&opts.sysfs);
        let (inventory, initial) = Inventory::scan(opts.sysfs.clone(), opts.filter.clone())?;
        let state = Arc::new(RwLock::new(Shared {
            inv: inventory,
            last_index: 0,
        }));
        let stats = Arc::new(SharedStats::default());
        let (tx, rx) = mpsc::channel();
        let mut w = worker::Worker::new(
            socket,
            Arc::clone(&wake),
            rx,
            Arc::clone(&state),
            log,
            on_change,
            Arc::clone(&stats),
            opts,
            seqnum,
            watches,
        );
        w.started(initial, previous)?;
        let thread = std::thread::Builder::new()
            .name("weir-devices".into())
            .spawn(move || w.run())
            .map_err(|e| Error::Thread { source: e })?;
        Ok(Tracker {
            groups,
            state,
            stats,
            requests: tx,
            wake,
            thread: Some(thread),
        })
    }

    /// Which uevent groups it reads.
    pub fn groups(&self) -> Groups {
        self.groups
    }

    /// Returns once every uevent the kernel had sent before the call is
    /// applied (and logged): the kernel's uevent sequence number is the
    /// barrier. If those events do not all arrive in time (the socket
    /// overflowed, or some were never meant for us), every device is read
    /// again instead, which is exact too. A device whose media changed
    /// has its new `diskseq` too, unless the kernel gives none within the
    /// timeout (a disc gets it only when next opened).
    pub fn sync(&self) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.request(Request::Sync(tx))?;
        rx.recv().map_err(|_| Error::Stopped)?
    }

    /// Reads the inventory.
    pub fn with_inventory<T>(&self, f: impl FnOnce(&Inventory) -> T) -> T {
        f(&self.read().inv)
    }

    /// The inventory as records describe it, with the index of the last
    /// record the tracker appended (0 without a log): the state that
    /// record left, for the next start's `previous`. A crash after it
    /// loses nothing: that start reads the records after this index.
    pub fn checkpoint(&self) -> Previous {
        let st = self.read();
        Previous::of(&Current::of(&st.inv), st.last_index)
    }

    /// A number that changes whenever the inventory does, for caching
    /// what is computed from it.
    pub fn generation(&self) -> u64 {
        self.stats.generation.load(Ordering::Acquire)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Shared> {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The counters.
    pub fn stats(&self) -> TrackerStats {
        self.stats.snapshot()
    }

    /// The thread has ended (on an error it could not recover from; `stop`
    /// returns it).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the thread, waiting for the activation commands it started,
    /// and returns its error, if it failed.
    pub fn stop(mut self) -> Result<()> {
        let _ = self.request(Request::Stop);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(p)) => std::panic::resume_unwind(p),
            None => Ok(()),
        }
    }

    fn request(&self, r: Request) -> Result<()> {
        self.requests.send(r).map_err(|_| Error::Stopped)?;
        rustix::io::write(&*self.wake, &1u64.to_ne_bytes())
            .map_err(|e| worker::sys("write eventfd", e))?;
        Ok(())
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.request(Request::Stop);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// udev's group when udevd runs, else the kernel's: taking both would
/// apply every event twice.
fn default_groups() -> Groups {
    let udev = udevd_runs();
    Groups {
        kernel: !udev,
        udev,
    }
}

/// Whether udevd runs (its control socket exists).
fn udevd_runs() -> bool {
    Path::new("/run/udev/control").exists()
}
