//! The tracker's thread: one `poll` on the wake eventfd, the fanotify group
//! and /proc/self/mountinfo; events applied one by one, whole-table
//! comparisons under the budget.

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use rustix::event::{PollFd, PollFlags, poll};
use weir_log::{Appended, Log};
use weir_sys::fanotify::{MountEvent, MountWatch};
use weir_sys::statmount::Statmounter;

use super::emit::write;
use super::{OnChange, Request, SharedStats, State, TrackerOptions};
use crate::backend::Backend;
use crate::budget::{Budget, thread_cpu_ns};
use crate::mountinfo::MountinfoFile;
use crate::table::Table;
use crate::{Error, Result, source};

/// Why a whole-table comparison runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Why {
    /// POLLPRI said the table changed (the mountinfo backend's every change;
    /// under fanotify, the changes it does not report).
    Changed,
    /// The fanotify queue overflowed: events were lost.
    Overflow,
    /// The periodic audit.
    Audit,
    /// A `sync()`.
    Sync,
}

pub(super) struct Worker {
    pub(super) backend: Backend,
    pub(super) watch: Option<MountWatch>,
    mountinfo: MountinfoFile,
    pub(super) sm: Statmounter,
    ids: Vec<u64>,
    pub(super) state: Arc<RwLock<State>>,
    pub(super) log: Option<Arc<Log>>,
    pub(super) on_change: Option<OnChange>,
    pub(super) opts: TrackerOptions,
    pub(super) stats: Arc<SharedStats>,
    requests: mpsc::Receiver<Request>,
    wake: Arc<OwnedFd>,
    budget: Budget,
    /// When POLLPRI first said the table changed since the last reading.
    dirty_since: Option<Instant>,
    /// When the last batch of fanotify events was read.
    pub(super) last_event: Instant,
    /// Whether the last batch came within twice `batch` of the one before:
    /// a storm, whose events are left to gather for `batch`.
    pub(super) storm: bool,
    /// When POLLPRI last said the table changed. Under mountinfo, which has
    /// no events, a storm's pause is measured from it.
    last_pri: Instant,
    pub(super) need_resync: bool,
    last_reading: Instant,
    /// Mounts that were gone before they could be read: their detach is
    /// still to come.
    pub(super) gone: HashSet<u64>,
    pub(super) last_appended: Option<Appended>,
    pub(super) log_error: Option<weir_log::Error>,
    pub(super) event_buf: Vec<MountEvent>,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        backend: Backend,
        watch: Option<MountWatch>,
        state: Arc<RwLock<State>>,
        log: Option<Arc<Log>>,
        on_change: Option<OnChange>,
        opts: TrackerOptions,
        stats: Arc<SharedStats>,
        requests: mpsc::Receiver<Request>,
        wake: Arc<OwnedFd>,
    ) -> Result<Worker> {
        let now = Instant::now();
        let budget = Budget::new(opts.budget, now);
        budget.publish(&stats.budget);
        Ok(Worker {
            backend,
            watch,
            mountinfo: MountinfoFile::open_self()?,
            sm: Statmounter::new(),
            ids: Vec::new(),
            state,
            log,
            on_change,
            budget,
            opts,
            stats,
            requests,
            wake,
            dirty_since: None,
            last_event: now,
            storm: false,
            last_pri: now,
            need_resync: false,
            last_reading: now,
            gone: HashSet::new(),
            last_appended: None,
            log_error: None,
            event_buf: Vec::with_capacity(1024),
        })
    }

    /// The first reading, before the thread starts: the table is complete
    /// when `Tracker::start` returns. It logs nothing but a MARK with the
    /// count; the mounts that were there before weir are not changes.
    pub(super) fn initial_read(&mut self) -> Result<()> {
        self.rearm_pollpri();
        let fresh = self.read_fresh()?;
        let count = fresh.len().to_string();
        let state = self.state.clone();
        let mut st = write(&state);
        st.table = Table::from_mounts(fresh);
        self.stats.generation.fetch_add(1, Ordering::Release);
        self.stats.readings.fetch_add(1, Ordering::Relaxed);
        self.mark(
            &mut st,
            b"mount table read",
            &[("mounts", count.as_bytes())],
        );
        Ok(())
    }

    pub(super) fn run(mut self) -> Result<()> {
        loop {
            // In a storm the events are left to gather (the fd is not
            // polled) until `hold` has passed.
            let hold = self.hold_events_until(Instant::now());
            let deadline = match (self.next_deadline(), hold) {
                (Some(d), Some(h)) => Some(d.min(h)),
                (d, h) => d.or(h),
            };
            let timeout = deadline.map(|d| {
                let left = d.saturating_duration_since(Instant::now());
                rustix::time::Timespec {
                    tv_sec: left.as_secs() as i64,
                    tv_nsec: i64::from(left.subsec_nanos()),
                }
            });
            // Under mountinfo PRI stays watched while a reading is pending,
            // so that a storm's pause can be seen (each poll that reports
            // it re-arms it); under fanotify the events show the pause.
            let watch_pri = self.dirty_since.is_none() || self.watch.is_none();
            // An fd that is not to wake the loop is left out of the set, not
            // given an empty mask: mountinfo's poll reports a change as
            // POLLERR too, which no mask can turn off, so a masked fd would
            // wake the loop at every mount anyway.
            let (woke, fan, pri) = {
                let mut fds = Vec::with_capacity(3);
                fds.push(PollFd::new(&*self.wake, PollFlags::IN));
                let pri_at = watch_pri.then(|| {
                    fds.push(PollFd::from_borrowed_fd(
                        self.mountinfo.as_fd(),
                        PollFlags::PRI,
                    ));
                    fds.len() - 1
                });
                let fan_at = match &self.watch {
                    Some(w) if hold.is_none() => {
                        fds.push(PollFd::from_borrowed_fd(w.as_fd(), PollFlags::IN));
                        Some(fds.len() - 1)
                    }
                    _ => None,
                };
                match poll(&mut fds, timeout.as_ref()) {
                    Ok(_) => {
                        self.stats.wakeups.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(sys("poll", e)),
                }
                let r = |i: Option<usize>| {
                    i.and_then(|i| fds.get(i))
                        .is_some_and(|f| !f.revents().is_empty())
                };
                // A hold that ran out is a read due: the events gathered
                // during it are there, and polling again to learn so would
                // cost a wakeup per read.
                let held_out = hold.is_some_and(|h| Instant::now() >= h);
                (r(Some(0)), held_out || r(fan_at), r(pri_at))
            };
            if pri {
                let now = Instant::now();
                self.last_pri = now;
                self.dirty_since.get_or_insert(now);
            }
            if fan && let Err(e) = self.drain_events() {
                // Events may be lost with the failed batch: a full reading
                // repairs the table, as after an overflow.
                tracing::warn!(error = %e, "reading mount events failed");
                self.need_resync = true;
            }
            let mut syncs = Vec::new();
            if woke {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(&*self.wake, &mut b);
                while let Ok(req) = self.requests.try_recv() {
                    match req {
                        Request::Sync(tx) => syncs.push(tx),
                        Request::Stop => {
                            self.update_cpu();
                            return Ok(());
                        }
                    }
                }
            }
            if !syncs.is_empty() {
                // Error is not Clone: on failure the first caller gets the
                // cause, the others that the same round failed.
                let mut r = self.barrier();
                for tx in syncs {
                    let next = if r.is_ok() {
                        Ok(())
                    } else {
                        Err(Error::SyncFailed)
                    };
                    let _ = tx.send(std::mem::replace(&mut r, next));
                }
            } else if let Some(why) = self.reading_due(Instant::now())
                && let Err(e) = self.compare(why)
            {
                // A failed reading is retried once the budget allows; the
                // table stays as it was meanwhile.
                tracing::warn!(error = %e, ?why, "reading the mount table failed");
                self.need_resync = true;
                self.charge(RETRY_COST_NS, Instant::now());
            }
            self.update_cpu();
        }
    }

    /// When the loop must wake without an event: a pending reading or the
    /// audit.
    fn next_deadline(&mut self) -> Option<Instant> {
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        let mut at = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        if self.need_resync {
            at(now + self.budget.wait(now));
        }
        if let Some(since) = self.dirty_since {
            let mut t =
                (now + self.budget.wait(now)).max(self.last_reading + self.opts.min_interval);
            if self.watch.is_some() {
                t = t.max(self.last_event + self.opts.quiet);
            } else if self.in_storm(since) {
                t = t.max(self.last_pri + self.opts.quiet);
            }
            at(t.min(since + self.opts.max_delay));
        }
        if let Some(iv) = self.opts.audit_interval {
            at(self.last_reading + iv);
        }
        next
    }

    /// Until when fanotify events are left to gather: in a storm, `batch`
    /// after the last read; `None` when they are to be read as they come.
    fn hold_events_until(&self, now: Instant) -> Option<Instant> {
        if self.watch.is_none() || !self.storm {
            return None;
        }
        let until = self.last_event + self.opts.batch;
        (now < until).then_some(until)
    }

    /// Whether a whole-table reading should run now, and why. Tells the
    /// stats whether one is due but held back by the budget.
    fn reading_due(&mut self, now: Instant) -> Option<Why> {
        let budget_ok = self.budget.wait(now).is_zero();
        if self.need_resync && budget_ok {
            return Some(Why::Overflow);
        }
        if let Some(since) = self.dirty_since {
            let quiet = match &self.watch {
                Some(_) => now >= self.last_event + self.opts.quiet,
                None => !self.in_storm(since) || now >= self.last_pri + self.opts.quiet,
            };
            let spaced = now >= self.last_reading + self.opts.min_interval;
            if (budget_ok && quiet && spaced) || now >= since + self.opts.max_delay {
                return Some(Why::Changed);
            }
        }
        if let Some(iv) = self.opts.audit_interval
            && now >= self.last_reading + iv
        {
            return Some(Why::Audit);
        }
        // A wanted reading waits for the budget whatever else it waits for
        // (the storm's pause, the spacing), until `max_delay` forces it.
        let wanted = self.need_resync || self.dirty_since.is_some();
        self.stats.set_throttled(wanted && !budget_ok);
        None
    }

    /// Under mountinfo, whether the pending change is part of a storm: it
    /// came within `min_interval` of the last reading. A lone change is
    /// read at once (budget permitting), so one mount reaches the log in
    /// about a millisecond; in a storm the reading waits for a pause of
    /// `quiet` (at most `max_delay`), as under fanotify, because each
    /// reading holds the namespace lock the mounters need.
    fn in_storm(&self, since: Instant) -> bool {
        self.watch.is_none() && since < self.last_reading + self.opts.min_interval
    }

    /// Charges the budget and shows its new level in the stats.
    fn charge(&mut self, cpu_ns: u64, now: Instant) {
        self.budget.charge(cpu_ns, now);
        self.budget.publish(&self.stats.budget);
    }

    /// `sync()`: compare (which drains the queue first), then wait until
    /// the records are durable.
    fn barrier(&mut self) -> Result<()> {
        self.compare(Why::Sync)?;
        if let Some(e) = self.log_error.take() {
            return Err(Error::Log(e));
        }
        if let (Some(log), Some(a)) = (&self.log, self.last_appended) {
            log.wait_durable(a)?;
        }
        Ok(())
    }

    /// Reads the whole table afresh and applies the differences.
    pub(super) fn compare(&mut self, why: Why) -> Result<()> {
        let start_cpu = thread_cpu_ns();
        // Re-arm POLLPRI before reading, so a change during the reading
        // raises a new one instead of being lost.
        self.rearm_pollpri();
        self.dirty_since = None;
        self.stats.set_throttled(false);
        if why == Why::Overflow || why == Why::Sync {
            // Events queued before the reading are older than it.
            self.drain_events()?;
        }
        self.need_resync = false;
        let fresh = self.read_fresh()?;
        let state = self.state.clone();
        let changes = {
            let mut st = write(&state);
            let changes = st.table.reconcile(fresh);
            if why == Why::Overflow {
                let n = changes.len().to_string();
                self.mark(
                    &mut st,
                    b"mount events lost: table re-read",
                    &[("changes", n.as_bytes())],
                );
                // Detaches of mounts that were gone before they were read
                // may have been lost with the overflow.
                self.gone.clear();
            }
            self.record(&mut st, &changes);
            changes
        };
        tracing::debug!(?why, changes = changes.len(), "compared the mount table");
        self.notify(&changes);
        let now = Instant::now();
        self.last_reading = now;
        let cost = thread_cpu_ns().saturating_sub(start_cpu);
        self.charge(cost, now);
        self.stats.readings.fetch_add(1, Ordering::Relaxed);
        self.stats.reading_cpu_ns.fetch_add(cost, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn read_fresh(&mut self) -> Result<Vec<crate::Mount>> {
        match self.backend {
            Backend::Fanotify => source::read_statmount(&mut self.sm, &mut self.ids),
            Backend::Mountinfo => self.mountinfo.read(),
        }
    }

    /// poll(2) on /proc/self/mountinfo reports POLLPRI once per change of
    /// the namespace's event counter and re-arms itself; a zero-timeout poll
    /// consumes a pending one.
    pub(super) fn rearm_pollpri(&self) {
        let mut fds = [PollFd::from_borrowed_fd(
            self.mountinfo.as_fd(),
            PollFlags::PRI,
        )];
        let _ = poll(&mut fds, Some(&rustix::time::Timespec::default()));
    }

    fn update_cpu(&self) {
        self.stats.cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
    }
}

/// What a failed reading costs the budget, so that retries are spaced out
/// (at 5%, one per 200 ms).
const RETRY_COST_NS: u64 = 10_000_000;

pub(super) fn sys(call: &'static str, errno: rustix::io::Errno) -> Error {
    Error::Sys(weir_sys::Error::Syscall { call, errno })
}
