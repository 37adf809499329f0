//! When a durable waiter polls for its record instead of sleeping, and for
//! how long.
//!
//! A waiter that sleeps on the futex costs a wake: on the test VM (2 vCPUs,
//! no guest halt polling) the committer's one wake of 64 sleeping writers
//! took about 200 µs per fsync, more than the fsync, and it was the bound
//! on durable appends. Waiters that instead yield the CPU in a loop until
//! their record is durable need no wake at all: in alternating runs of
//! this build and the one before, against a disk doing 3–4k fsyncs/s, 64
//! writers went from 89–99k to 149–155k records/s and 4 writers from
//! 14–15k to 18.5k.
//!
//! Polling pays only while the fsync is short, so a waiter polls only
//! where the last fsync took at most [`POLL_MAX`], and for at most that
//! long. It also pays only while the waiters have the CPUs to themselves.
//! A yielding thread stays runnable, and a CPU-bound task elsewhere then
//! runs its whole scheduler slice (about 3 ms here) before a polling
//! writer gets the CPU back, where a sleeping writer is woken with
//! priority. With one such task running, polling cut 64 writers from
//! about 130k to 90–110k records/s. A yield slower than [`SLOW_YIELD`] is
//! the sign. The host makes some too: it stops a vCPU now and then, and
//! every writer queued there sees one slow yield at once. So slow yields
//! within [`EPISODE`] of one another count once, and polling shuts for
//! [`BACKOFF`] only when [`SHUT_EPISODES`] come within [`WINDOW`]: among
//! the writers alone there were a few such episodes a second, with one
//! CPU-bound task beside them hundreds.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The longest a durable waiter polls before it sleeps, and the longest
/// fsync after which it polls at all.
pub(crate) const POLL_MAX: Duration = Duration::from_millis(1);

/// A yield that takes longer means another task held the CPU meanwhile.
/// Among 64 writers on 2 CPUs a yield comes back once the writers queued
/// on that CPU have taken their turns, almost always within 0.5 ms.
pub(crate) const SLOW_YIELD: Duration = Duration::from_millis(1);

/// How long polling stays shut once polls keep losing the CPU.
pub(crate) const BACKOFF: Duration = Duration::from_secs(1);

/// Slow yields closer together than this are one episode.
const EPISODE: Duration = Duration::from_millis(1);

/// Episodes are counted within windows this long...
const WINDOW: Duration = Duration::from_millis(100);

/// ...and this many in one window shut polling.
const SHUT_EPISODES: u32 = 5;

/// Whether durable waiters may poll: shut for a while once polls keep
/// losing the CPU to other tasks.
#[derive(Debug)]
pub(crate) struct PollGate {
    base: Instant,
    /// Polling stays shut until this many ns after `base`.
    shut_until: AtomicU64,
    /// When the last slow yield was seen, in ns after `base`.
    last_slow: AtomicU64,
    /// When the current window of episodes began, in ns after `base`.
    window_start: AtomicU64,
    /// Episodes in the current window.
    episodes: AtomicU32,
    /// Times polling was shut, for `Stats`.
    shuts: AtomicU64,
}

impl PollGate {
    pub(crate) fn new() -> Self {
        PollGate {
            base: Instant::now(),
            shut_until: AtomicU64::new(0),
            last_slow: AtomicU64::new(0),
            window_start: AtomicU64::new(0),
            episodes: AtomicU32::new(0),
            shuts: AtomicU64::new(0),
        }
    }

    /// How many times polling has been shut for [`BACKOFF`].
    pub(crate) fn shuts(&self) -> u64 {
        self.shuts.load(Ordering::Relaxed)
    }

    /// How long a waiter may poll at `now` when the last fsync took `sync`:
    /// `None` when it should sleep at once.
    pub(crate) fn window(&self, sync: Duration, now: Instant) -> Option<Duration> {
        if sync > POLL_MAX || self.ns(now) < self.shut_until.load(Ordering::Relaxed) {
            return None;
        }
        Some(POLL_MAX)
    }

    /// Yields the CPU between calls of `done` until it holds or `window`
    /// passes; a slow yield ends the poll too. Returns whether `done` held.
    pub(crate) fn poll(
        &self,
        start: Instant,
        window: Duration,
        mut done: impl FnMut() -> bool,
    ) -> bool {
        let until = start + window;
        let mut last = start;
        loop {
            if done() {
                return true;
            }
            if last >= until {
                return false;
            }
            std::thread::yield_now();
            let now = Instant::now();
            if now.duration_since(last) > SLOW_YIELD {
                self.slow_yield(now);
                return done();
            }
            last = now;
        }
    }

    /// Counts a slow yield seen at `now`, and shuts polling when too many
    /// episodes of them come close together. Racing writers may lose an
    /// update, which moves a count by one.
    fn slow_yield(&self, now: Instant) {
        let t = self.ns(now);
        let prev = self.last_slow.swap(t, Ordering::Relaxed);
        if t.saturating_sub(prev) < dur_ns(EPISODE) {
            return;
        }
        if t.saturating_sub(self.window_start.load(Ordering::Relaxed)) > dur_ns(WINDOW) {
            self.window_start.store(t, Ordering::Relaxed);
            self.episodes.store(1, Ordering::Relaxed);
            return;
        }
        if self.episodes.fetch_add(1, Ordering::Relaxed) + 1 >= SHUT_EPISODES {
            self.shut_until
                .fetch_max(t + dur_ns(BACKOFF), Ordering::Relaxed);
            self.episodes.store(0, Ordering::Relaxed);
            self.shuts.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn ns(&self, t: Instant) -> u64 {
        dur_ns(t.saturating_duration_since(self.base))
    }
}

fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_fsync_means_no_poll() {
        let g = PollGate::new();
        let now = Instant::now();
        assert_eq!(g.window(POLL_MAX + Duration::from_nanos(1), now), None);
        assert_eq!(g.window(POLL_MAX, now), Some(POLL_MAX));
        assert_eq!(g.window(Duration::ZERO, now), Some(POLL_MAX));
    }

    #[test]
    fn a_poll_ends_when_done_holds_or_the_window_passes() {
        let g = PollGate::new();
        let mut calls = 0;
        // A slow yield after the first look also ends the poll with a
        // second look, so the answer is the same on a loaded host.
        assert!(g.poll(Instant::now(), POLL_MAX, || {
            calls += 1;
            calls >= 2
        }));
        assert_eq!(calls, 2);
        let start = Instant::now();
        assert!(!g.poll(start, Duration::from_micros(100), || false));
        assert!(start.elapsed() >= Duration::from_micros(100));
    }

    /// One poll of `g` whose second look takes longer than a slow yield,
    /// standing for another task that held the CPU between two looks.
    fn slow_poll(g: &PollGate) -> usize {
        let mut looks = 0;
        assert!(!g.poll(Instant::now(), POLL_MAX * 100, || {
            looks += 1;
            if looks == 2 {
                std::thread::sleep(SLOW_YIELD * 2);
            }
            false
        }));
        looks
    }

    #[test]
    fn a_slow_yield_ends_the_poll() {
        let g = PollGate::new();
        // The look after the slow one is the last (a yield that was itself
        // slow on a loaded host ends it sooner).
        let looks = slow_poll(&g);
        assert!(looks <= 3, "{looks} looks");
    }

    #[test]
    fn polling_shuts_for_a_while_when_polls_keep_losing_the_cpu() {
        let g = PollGate::new();
        let t0 = Instant::now();
        // Slow yields close together are one episode (the host stopping
        // the vCPU every writer polls on), however many writers see it.
        for i in 0..32 {
            g.slow_yield(t0 + Duration::from_micros(10 * i));
        }
        assert!(g.window(Duration::ZERO, t0).is_some());
        // Episodes a second apart are the host's noise.
        for i in 1..=SHUT_EPISODES * 2 {
            g.slow_yield(t0 + Duration::from_secs(u64::from(i)));
        }
        let t1 = t0 + Duration::from_secs(u64::from(SHUT_EPISODES * 2));
        assert!(g.window(Duration::ZERO, t1).is_some());
        assert_eq!(g.shuts(), 0);
        // Episodes many times a window are another task taking the CPU:
        // polling shuts, for every waiter, for a while.
        let t2 = t1 + Duration::from_secs(1);
        for i in 0..SHUT_EPISODES {
            g.slow_yield(t2 + EPISODE * 3 * i);
        }
        let t3 = t2 + EPISODE * 3 * SHUT_EPISODES;
        assert_eq!(g.window(Duration::ZERO, t3), None);
        assert_eq!(g.shuts(), 1);
        assert!(g.window(Duration::ZERO, t3 + BACKOFF).is_some());
    }
}
