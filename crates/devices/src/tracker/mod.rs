//! The device tracker: a thread that keeps the [`Inventory`] exact from
//! kernel uevents and logs each change.
//!
//! The uevent socket is opened *before* the first scan, so an event that
//! races the scan is queued rather than lost; applying it again later is
//! harmless, since every event re-reads the device's current state.
//!
//! The handle shares the inventory behind a read-write lock and talks to
//! the thread over a channel plus an eventfd, so the thread sleeps in one
//! `poll` on the socket and its requests.

mod activation;
mod worker;

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::event::{EventfdFlags, eventfd};
use weir_log::Log;
use weir_sys::uevent::{Groups, UeventSocket};

use crate::change::Change;
use crate::filter::Filter;
use crate::inventory::Inventory;
use crate::sysfs::Sysfs;
use crate::{Error, Result};

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
}

impl Default for TrackerOptions {
    fn default() -> Self {
        TrackerOptions {
            sysfs: Sysfs::default(),
            filter: Filter::accept_all(),
            on_vg_complete: None,
            groups: None,
            sync_timeout: Duration::from_secs(2),
        }
    }
}

/// Called on the tracker's thread for every change, after it is in the
/// inventory and the log.
pub type OnChange = Box<dyn FnMut(&Change) + Send>;

/// Counters of a running tracker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackerStats {
    /// Messages read from the uevent socket (every subsystem).
    pub messages: u64,
    /// Messages refused: malformed, or from an untrusted sender.
    pub refused: u64,
    /// Times the kernel dropped uevents (each followed by a re-read).
    pub overflows: u64,
    /// Changes found (and records appended, with a log).
    pub changes: u64,
    /// On-VG-complete commands started.
    pub activations: u64,
}

#[derive(Default)]
struct SharedStats {
    messages: AtomicU64,
    refused: AtomicU64,
    overflows: AtomicU64,
    changes: AtomicU64,
    activations: AtomicU64,
}

impl SharedStats {
    fn snapshot(&self) -> TrackerStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TrackerStats {
            messages: l(&self.messages),
            refused: l(&self.refused),
            overflows: l(&self.overflows),
            changes: l(&self.changes),
            activations: l(&self.activations),
        }
    }
}

enum Request {
    Sync(mpsc::Sender<Result<()>>),
    Stop,
}

/// A running device tracker.
pub struct Tracker {
    groups: Groups,
    inventory: Arc<RwLock<Inventory>>,
    stats: Arc<SharedStats>,
    requests: mpsc::Sender<Request>,
    wake: Arc<OwnedFd>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Tracker {
    /// Subscribes to uevents, reads every device, logs the start (a MARK
    /// and the VGs already complete) and starts the thread that keeps the
    /// inventory current.
    pub fn start(
        log: Option<Arc<Log>>,
        opts: TrackerOptions,
        on_change: Option<OnChange>,
    ) -> Result<Tracker> {
        let groups = opts.groups.unwrap_or_else(default_groups);
        let socket = UeventSocket::open(groups)?;
        let wake = Arc::new(
            eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
                .map_err(|e| worker::sys("eventfd", e))?,
        );
        let (inventory, initial) = Inventory::scan(opts.sysfs.clone(), opts.filter.clone())?;
        let inventory = Arc::new(RwLock::new(inventory));
        let stats = Arc::new(SharedStats::default());
        let (tx, rx) = mpsc::channel();
        let mut w = worker::Worker::new(
            socket,
            Arc::clone(&wake),
            rx,
            Arc::clone(&inventory),
            log,
            on_change,
            Arc::clone(&stats),
            opts,
        );
        w.started(initial)?;
        let thread = std::thread::Builder::new()
            .name("weir-devices".into())
            .spawn(move || w.run())
            .map_err(|e| Error::Thread { source: e })?;
        Ok(Tracker {
            groups,
            inventory,
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
    /// again instead, which is exact too.
    pub fn sync(&self) -> Result<()> {
        let (tx, rx) = mpsc::channel();
        self.request(Request::Sync(tx))?;
        rx.recv().map_err(|_| Error::Stopped)?
    }

    /// Reads the inventory.
    pub fn with_inventory<T>(&self, f: impl FnOnce(&Inventory) -> T) -> T {
        let inv = self
            .inventory
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&inv)
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

/// udev's group when udevd runs (its control socket exists), else the
/// kernel's: taking both would apply every event twice.
fn default_groups() -> Groups {
    let udev = Path::new("/run/udev/control").exists();
    Groups {
        kernel: !udev,
        udev,
    }
}
