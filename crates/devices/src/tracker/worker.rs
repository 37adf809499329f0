//! The tracker's thread: one `poll` on the wake eventfd and the uevent
//! socket. Each batch of messages is read until the socket is empty, and
//! each block-device event is applied to the inventory at once: one sysfs
//! snapshot and at most one probe, whatever the number of devices.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock, mpsc};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use weir_log::Log;
use weir_sys::uevent::{Recv, UeventSocket};

use super::activation::Activator;
use super::{OnChange, Request, SharedStats, TrackerOptions};
use crate::change::{Change, ChangeKind};
use crate::inventory::Inventory;
use crate::record;
use crate::uevent::parse_received;
use crate::{Error, Result};

/// The receive buffer: larger than any uevent the kernel sends (8 KiB), so
/// a message that fills it was truncated.
const RECV_BUF: usize = 16 * 1024;

pub(super) struct Worker {
    socket: UeventSocket,
    wake: Arc<OwnedFd>,
    requests: mpsc::Receiver<Request>,
    inventory: Arc<RwLock<Inventory>>,
    log: Option<Arc<Log>>,
    on_change: Option<OnChange>,
    stats: Arc<SharedStats>,
    activator: Option<Activator>,
    sync_timeout: Duration,
    /// The highest uevent sequence number seen, for `sync`.
    seqnum: u64,
    buf: Vec<u8>,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        socket: UeventSocket,
        wake: Arc<OwnedFd>,
        requests: mpsc::Receiver<Request>,
        inventory: Arc<RwLock<Inventory>>,
        log: Option<Arc<Log>>,
        on_change: Option<OnChange>,
        stats: Arc<SharedStats>,
        opts: TrackerOptions,
    ) -> Worker {
        let activator = opts
            .on_vg_complete
            .map(|argv| Activator::start(argv, log.clone()));
        Worker {
            socket,
            wake,
            requests,
            inventory,
            log,
            on_change,
            stats,
            activator,
            sync_timeout: opts.sync_timeout,
            seqnum: 0,
            buf: vec![0; RECV_BUF],
        }
    }

    /// Logs the start: a MARK with the counts, then the VGs complete
    /// already.
    pub(super) fn started(&mut self, initial: Vec<Change>) -> Result<()> {
        if let Some(log) = &self.log {
            let (devices, pvs, vgs) = self.counts();
            record::mark(
                log,
                "block devices read",
                &[
                    ("devices", devices.to_string().as_bytes()),
                    ("pvs", pvs.to_string().as_bytes()),
                    ("vgs", vgs.to_string().as_bytes()),
                ],
            )?;
        }
        self.emit(&initial)
    }

    /// The devices, PVs and VGs known.
    fn counts(&self) -> (usize, usize, usize) {
        let inv = self.inventory.read().unwrap_or_else(|p| p.into_inner());
        (inv.devices().count(), inv.pv_count(), inv.vgs().len())
    }

    pub(super) fn run(mut self) -> Result<()> {
        let result = self.serve();
        if let Some(a) = self.activator.take() {
            a.finish();
        }
        result
    }

    fn serve(&mut self) -> Result<()> {
        loop {
            let mut fds = [
                PollFd::new(&*self.wake, PollFlags::IN),
                PollFd::new(&self.socket, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(sys("poll", e)),
            }
            let woken = !fds[0].revents().is_empty();
            self.drain()?;
            if woken {
                let mut counter = [0u8; 8];
                let _ = rustix::io::read(&*self.wake, &mut counter);
                while let Ok(req) = self.requests.try_recv() {
                    match req {
                        Request::Stop => return Ok(()),
                        Request::Sync(reply) => {
                            let r = self.barrier();
                            let _ = reply.send(r);
                        }
                    }
                }
            }
        }
    }

    /// Reads and applies every queued message.
    fn drain(&mut self) -> Result<()> {
        loop {
            match self.socket.recv(&mut self.buf)? {
                Recv::WouldBlock => return Ok(()),
                Recv::Overflow => self.resync()?,
                Recv::Message(msg) => {
                    self.stats.messages.fetch_add(1, Ordering::Relaxed);
                    let bytes = &self.buf[..msg.len.min(self.buf.len())];
                    let ev = match parse_received(&msg, bytes) {
                        Ok(ev) => ev,
                        Err(e) => {
                            self.stats.refused.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(error = %e, "refused a uevent");
                            continue;
                        }
                    };
                    if let Some(n) = ev.seqnum {
                        self.seqnum = self.seqnum.max(n);
                    }
                    let changes = self
                        .inventory
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .on_uevent(&ev);
                    self.emit(&changes)?;
                }
            }
        }
    }

    /// The kernel dropped uevents: read everything again and log the
    /// difference after a MARK saying so.
    fn resync(&mut self) -> Result<()> {
        self.stats.overflows.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("the kernel dropped uevents; reading every block device again");
        let changes = self
            .inventory
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .resync()?;
        if let Some(log) = &self.log {
            let n = changes.len().to_string();
            record::mark(
                log,
                "device events lost: devices re-read",
                &[("changes", n.as_bytes())],
            )?;
        }
        self.emit(&changes)
    }

    /// `sync`: every uevent numbered up to the kernel's current sequence
    /// number is applied, or everything is re-read.
    fn barrier(&mut self) -> Result<()> {
        let target = read_uevent_seqnum();
        let deadline = Instant::now() + self.sync_timeout;
        loop {
            self.drain()?;
            match target {
                Some(t) if self.seqnum >= t => return Ok(()),
                // Without the counter there is no barrier to wait for.
                None => return self.resync(),
                Some(_) => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return self.resync();
            }
            let mut fds = [PollFd::new(&self.socket, PollFlags::IN)];
            let wait = rustix::time::Timespec::try_from(left.min(Duration::from_millis(10)))
                .unwrap_or_default();
            match poll(&mut fds, Some(&wait)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(sys("poll", e)),
            }
        }
    }

    /// Logs each change, shows it to the caller and starts activations.
    fn emit(&mut self, changes: &[Change]) -> Result<()> {
        for c in changes {
            if let Some(log) = &self.log {
                let inv = self.inventory.read().unwrap_or_else(|p| p.into_inner());
                let _appended = record::append(log, c, |disk| {
                    inv.by_name(disk)
                        .map(|e| crate::DevNum::of(&e.device).to_be_bytes())
                })?;
            }
            self.stats.changes.fetch_add(1, Ordering::Relaxed);
            if let Some(f) = self.on_change.as_mut() {
                f(c);
            }
            if let (ChangeKind::VgComplete { vg, .. }, Some(a)) = (&c.kind, &self.activator) {
                self.stats.activations.fetch_add(1, Ordering::Relaxed);
                a.activate(&vg.name);
            }
        }
        Ok(())
    }
}

/// /sys/kernel/uevent_seqnum: the number of the last uevent the kernel
/// sent.
fn read_uevent_seqnum() -> Option<u64> {
    std::fs::read_to_string("/sys/kernel/uevent_seqnum")
        .ok()?
        .trim()
        .parse()
        .ok()
}

pub(super) fn sys(call: &'static str, errno: Errno) -> Error {
    Error::Sys(weir_sys::Error::Syscall { call, errno })
}
