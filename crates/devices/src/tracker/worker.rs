//! The tracker's thread: one `poll` on the wake eventfd, the uevent socket
//! and the inotify instance that watches device nodes for writes. Writes
//! are read first (each was queued before any uevent that echoes it), then
//! uevents until the socket is empty. Each is applied to the inventory at
//! once: one sysfs snapshot and at most one probe, whatever the number of
//! devices.

use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock, RwLockWriteGuard, mpsc};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use rustix::time::Timespec;
use weir_log::Log;
use weir_sys::uevent::{Recv, UeventSocket};

use super::activation::Activator;
use super::watch::Watches;
use super::{OnChange, Request, Shared, SharedStats, TrackerOptions, reconcile};
use crate::change::{Change, ChangeKind};
use crate::devnum::DevNum;
use crate::inventory::Inventory;
use crate::previous::Previous;
use crate::record;
use crate::uevent::{Action, Uevent, parse_received};
use crate::{Error, Result};

/// The receive buffer: larger than any uevent the kernel sends (8 KiB), so
/// a message that fills it was truncated.
const RECV_BUF: usize = 16 * 1024;

/// How long a device waits for a media change's new `diskseq` (see
/// `inventory::media`). A loop detach sets it microseconds after its
/// event; a disc only when it is next opened, which may be never.
const DISKSEQ_PATIENCE: Duration = Duration::from_secs(1);

/// The first and the longest pause before a waiting device is read
/// again: short, since a loop device's number is almost always there at
/// the first look; doubling, so a disc that keeps its number costs about
/// a dozen reads.
const RECHECK_FIRST: Duration = Duration::from_micros(200);
const RECHECK_MAX: Duration = Duration::from_millis(200);

/// How often devices without a watch are probed for writes: a header read
/// each, so a second keeps thousands of them cheap.
const UNWATCHED_POLL: Duration = Duration::from_secs(1);

pub(super) struct Worker {
    socket: UeventSocket,
    wake: Arc<OwnedFd>,
    requests: mpsc::Receiver<Request>,
    state: Arc<RwLock<Shared>>,
    log: Option<Arc<Log>>,
    on_change: Option<OnChange>,
    stats: Arc<SharedStats>,
    activator: Option<Activator>,
    sync_timeout: Duration,
    /// The uevent sequence number up to which every event is applied (or
    /// covered by a whole reading made after it), for `sync`.
    seqnum: u64,
    /// The pause before devices that wait for a media change's `diskseq`
    /// are read again; `None` while none waits.
    recheck: Option<Duration>,
    /// The watches on device nodes for metadata writes.
    watches: Watches,
    /// When the devices without a watch are probed next.
    next_poll: Instant,
    buf: Vec<u8>,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        socket: UeventSocket,
        wake: Arc<OwnedFd>,
        requests: mpsc::Receiver<Request>,
        state: Arc<RwLock<Shared>>,
        log: Option<Arc<Log>>,
        on_change: Option<OnChange>,
        stats: Arc<SharedStats>,
        opts: TrackerOptions,
        seqnum: u64,
        watches: Watches,
    ) -> Worker {
        let activator = opts
            .on_vg_complete
            .map(|argv| Activator::start(argv, log.clone()));
        Worker {
            socket,
            wake,
            requests,
            state,
            log,
            on_change,
            stats,
            activator,
            sync_timeout: opts.sync_timeout,
            seqnum,
            recheck: None,
            watches,
            next_poll: Instant::now() + UNWATCHED_POLL,
            buf: vec![0; RECV_BUF],
        }
    }

    /// Logs the start: a MARK with the counts, then the VGs complete
    /// already or, with a previous state, what changed since it.
    pub(super) fn started(
        &mut self,
        initial: Vec<Change>,
        previous: Option<Previous>,
    ) -> Result<()> {
        let mut st = lock(&self.state);
        if let Some(log) = &self.log {
            let (devices, pvs, vgs) = counts(&st.inv);
            let mark = record::mark(
                log,
                "block devices read",
                &[
                    ("devices", devices.to_string().as_bytes()),
                    ("pvs", pvs.to_string().as_bytes()),
                    ("vgs", vgs.to_string().as_bytes()),
                ],
            )?;
            // The scan is the state as of this record.
            st.last_index = mark.index();
        }
        let changes = match previous {
            None => {
                commit(self.log.as_deref(), &self.stats, &mut st, &initial)?;
                initial
            }
            Some(prev) => reconcile::reconcile(self.log.as_deref(), &self.stats, &mut st, prev)?,
        };
        self.watches.update_all(&st.inv);
        self.publish(&st);
        drop(st);
        self.after(&changes);
        Ok(())
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
            let woken = {
                let mut fds = vec![
                    PollFd::new(&*self.wake, PollFlags::IN),
                    PollFd::new(&self.socket, PollFlags::IN),
                ];
                if let Some(fd) = self.watches.fd() {
                    fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
                }
                let poll_in = self
                    .watches
                    .any_unwatched()
                    .then(|| self.next_poll.saturating_duration_since(Instant::now()));
                let wait = match (self.recheck, poll_in) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let timeout = wait.and_then(|d| Timespec::try_from(d).ok());
                match poll(&mut fds, timeout.as_ref()) {
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(e) => return Err(sys("poll", e)),
                }
                !fds[0].revents().is_empty()
            };
            self.drain()?;
            self.recheck()?;
            self.poll_unwatched(false)?;
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

    /// Applies every queued write, then every queued uevent.
    fn drain(&mut self) -> Result<()> {
        self.drain_writes()?;
        self.drain_uevents()
    }

    /// Probes every device closed after writing since the last look: a
    /// metadata write raises no uevent. After lost events, every watched
    /// device, after a MARK saying so.
    fn drain_writes(&mut self) -> Result<()> {
        let written = self.watches.take()?;
        let devices = if written.overflow {
            self.stats.write_overflows.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                "inotify dropped device write events; probing every watched device again"
            );
            let all = self.watches.all_watched();
            if let Some(log) = &self.log {
                let n = all.len().to_string();
                let mut st = lock(&self.state);
                let mark = record::mark(
                    log,
                    "device writes lost: devices probed again",
                    &[("devices", n.as_bytes())],
                )?;
                st.last_index = mark.index();
            }
            all
        } else {
            written.devices
        };
        self.probe_written(&devices)
    }

    /// Probes `devices` as written, applying and logging what changed.
    fn probe_written(&mut self, devices: &[DevNum]) -> Result<()> {
        if devices.is_empty() {
            return Ok(());
        }
        let mut st = lock(&self.state);
        let mut all = Vec::new();
        for &dn in devices {
            self.stats.writes.fetch_add(1, Ordering::Relaxed);
            let changes = st.inv.on_write(dn);
            self.watches.wrote(dn);
            commit(self.log.as_deref(), &self.stats, &mut st, &changes)?;
            all.extend(changes);
        }
        self.publish(&st);
        drop(st);
        self.after(&all);
        Ok(())
    }

    /// Probes the devices that have no watch, when their time has come or
    /// when `now` (a `sync`) asks.
    fn poll_unwatched(&mut self, now: bool) -> Result<()> {
        if !self.watches.any_unwatched() || (!now && Instant::now() < self.next_poll) {
            return Ok(());
        }
        self.next_poll = Instant::now() + UNWATCHED_POLL;
        let devices: Vec<DevNum> = self.watches.unwatched().collect();
        self.probe_written(&devices)?;
        // A poll may find what a watch would: try to watch them again.
        let st = lock(&self.state);
        for dn in devices {
            self.watches.update(dn, &st.inv);
        }
        self.publish(&st);
        Ok(())
    }

    /// Stores the inventory's generation and the watch gauges, under the
    /// inventory's lock.
    fn publish(&self, st: &Shared) {
        self.stats
            .generation
            .store(st.inv.generation(), Ordering::Release);
        self.stats
            .watched
            .store(self.watches.watched() as u64, Ordering::Relaxed);
        self.stats
            .unwatched
            .store(self.watches.unwatched_count() as u64, Ordering::Relaxed);
    }

    /// Applies one uevent. A synthesized `change` that echoes a write
    /// probed already is not probed again.
    fn apply_uevent(&mut self, ev: &Uevent) -> Result<()> {
        let mut st = lock(&self.state);
        let dn = match (ev.major, ev.minor) {
            (Some(major), Some(minor)) => Some(DevNum { major, minor }),
            _ => st.inv.by_name(ev.name()).map(|e| DevNum::of(&e.device)),
        };
        let echo = ev.action == Action::Change
            && ev.get("SYNTH_UUID").is_some()
            && dn.is_some_and(|dn| self.watches.take_echo(dn));
        let changes = if echo {
            st.inv.on_echo(ev)
        } else {
            st.inv.on_uevent(ev)
        };
        commit(self.log.as_deref(), &self.stats, &mut st, &changes)?;
        if let Some(dn) = dn
            && ev.is_block()
        {
            self.watches.update(dn, &st.inv);
        }
        self.publish(&st);
        drop(st);
        self.after(&changes);
        Ok(())
    }

    /// Reads and applies every queued uevent.
    fn drain_uevents(&mut self) -> Result<()> {
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
                    self.apply_uevent(&ev)?;
                }
            }
        }
    }

    /// Reads again the devices that wait for a media change's `diskseq`,
    /// and sets when to do so next.
    fn recheck(&mut self) -> Result<()> {
        // A read lock for the usual answer, so that readers are not held
        // up after every batch of events; this thread is the only writer.
        let waits = self
            .state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .inv
            .awaits_diskseq();
        if !waits {
            self.recheck = None;
            return Ok(());
        }
        let mut st = lock(&self.state);
        let changes = st.inv.recheck_diskseq(DISKSEQ_PATIENCE);
        commit(self.log.as_deref(), &self.stats, &mut st, &changes)?;
        self.publish(&st);
        self.recheck = if st.inv.awaits_diskseq() {
            Some(
                self.recheck
                    .map_or(RECHECK_FIRST, |d| (d * 2).min(RECHECK_MAX)),
            )
        } else {
            None
        };
        drop(st);
        self.after(&changes);
        Ok(())
    }

    /// The kernel dropped uevents: read everything again and log the
    /// difference after a MARK saying so.
    fn resync(&mut self) -> Result<()> {
        self.stats.overflows.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("the kernel dropped uevents; reading every block device again");
        // A reading made after this number was read covers every event up
        // to it, whether or not the event itself ever arrives.
        let covered = read_uevent_seqnum();
        let mut st = lock(&self.state);
        let changes = st.inv.resync()?;
        if let Some(n) = covered {
            self.seqnum = self.seqnum.max(n);
        }
        if let Some(log) = &self.log {
            let n = changes.len().to_string();
            let mark = record::mark(
                log,
                "device events lost: devices re-read",
                &[("changes", n.as_bytes())],
            )?;
            st.last_index = mark.index();
        }
        commit(self.log.as_deref(), &self.stats, &mut st, &changes)?;
        self.watches.update_all(&st.inv);
        self.publish(&st);
        drop(st);
        self.after(&changes);
        Ok(())
    }

    /// `sync`: every write closed before the call is probed (its event is
    /// queued by then), every device without a watch is probed, every
    /// uevent numbered up to the kernel's current sequence number is
    /// applied, or everything is re-read; and no device waits for a media
    /// change's `diskseq` any more.
    fn barrier(&mut self) -> Result<()> {
        let target = read_uevent_seqnum();
        self.drain_writes()?;
        self.poll_unwatched(true)?;
        let deadline = Instant::now() + self.sync_timeout;
        loop {
            self.drain()?;
            self.recheck()?;
            // Without the counter there is no barrier to wait for.
            let Some(target) = target else {
                return self.resync();
            };
            let caught_up = self.seqnum >= target;
            if caught_up && self.recheck.is_none() {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // A disc that keeps its old number is no lost event.
                return if caught_up { Ok(()) } else { self.resync() };
            }
            let mut fds = [PollFd::new(&self.socket, PollFlags::IN)];
            let pause = self.recheck.unwrap_or(Duration::from_millis(10));
            let wait = Timespec::try_from(left.min(pause)).unwrap_or_default();
            match poll(&mut fds, Some(&wait)) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => return Err(sys("poll", e)),
            }
        }
    }

    /// Counts and shows each change, logged already, to the caller, and
    /// starts activations; after the lock is released, so a slow callback
    /// holds up no reader.
    fn after(&mut self, changes: &[Change]) {
        for c in changes {
            self.stats.changes.fetch_add(1, Ordering::Relaxed);
            if let Some(f) = self.on_change.as_mut() {
                f(c);
            }
            if let (ChangeKind::VgComplete { vg, .. }, Some(a)) = (&c.kind, &self.activator) {
                self.stats.activations.fetch_add(1, Ordering::Relaxed);
                a.activate(&vg.name);
            }
        }
    }
}

/// Appends the records of `changes`, just applied to `st.inv`, while the
/// caller holds the lock: a checkpoint then never sees the inventory ahead
/// of, or behind, `st.last_index`. (The generation follows the inventory
/// itself: see [`Worker::publish`].)
fn commit(
    log: Option<&Log>,
    stats: &SharedStats,
    st: &mut Shared,
    changes: &[Change],
) -> Result<()> {
    stats
        .generation
        .store(st.inv.generation(), Ordering::Release);
    if changes.is_empty() {
        return Ok(());
    }
    if let Some(log) = log {
        for c in changes {
            let appended = record::append(log, c, |disk| {
                st.inv
                    .by_name(disk)
                    .map(|e| DevNum::of(&e.device).to_be_bytes())
            })?;
            st.last_index = appended.index();
        }
    }
    Ok(())
}

/// The write lock, poisoned or not, as the handle's readers take it.
pub(super) fn lock(state: &RwLock<Shared>) -> RwLockWriteGuard<'_, Shared> {
    state
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The devices, PVs and VGs known.
pub(super) fn counts(inv: &Inventory) -> (usize, usize, usize) {
    (inv.devices().count(), inv.pv_count(), inv.vgs().len())
}

/// /sys/kernel/uevent_seqnum: the number of the last uevent the kernel
/// sent.
pub(super) fn read_uevent_seqnum() -> Option<u64> {
    std::fs::read_to_string("/sys/kernel/uevent_seqnum")
        .ok()?
        .trim()
        .parse()
        .ok()
}

pub(super) fn sys(call: &'static str, errno: Errno) -> Error {
    Error::Sys(weir_sys::Error::Syscall { call, errno })
}
