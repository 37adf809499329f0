//! The CPU budget for whole-table readings.
//!
//! Re-reading the whole table is O(mounts); in a storm, doing it per change
//! is what made systemd take 20 s for 2000 mounts (seed 003). A token bucket
//! holds the readings to a share of one core: each reading costs the CPU
//! time it really took (this thread's clock), and tokens come back at
//! `share` ns per ns of wall time. The delay a reading can suffer is thus
//! bounded by its own cost divided by the share.

use std::time::{Duration, Instant};

/// A token bucket of CPU time.
#[derive(Debug)]
pub(crate) struct Budget {
    share: f64,
    cap_ns: f64,
    tokens_ns: f64,
    last: Instant,
}

impl Budget {
    /// A budget of `share` of one core (0.05 = 5%), full at the start.
    pub(crate) fn new(share: f64, now: Instant) -> Budget {
        let share = share.clamp(0.001, 1.0);
        // Enough for a burst of readings of a large table after a quiet spell.
        let cap_ns = 20e6;
        Budget {
            share,
            cap_ns,
            tokens_ns: cap_ns,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_nanos() as f64;
        self.tokens_ns = (self.tokens_ns + dt * self.share).min(self.cap_ns);
        self.last = now;
    }

    /// How long until a reading may start: zero when it may start now.
    pub(crate) fn wait(&mut self, now: Instant) -> Duration {
        self.refill(now);
        if self.tokens_ns >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_nanos((-self.tokens_ns / self.share).ceil() as u64)
        }
    }

    /// Takes the cost of a reading.
    pub(crate) fn charge(&mut self, cpu_ns: u64, now: Instant) {
        self.refill(now);
        self.tokens_ns -= cpu_ns as f64;
    }
}

/// This thread's CPU time in ns.
pub(crate) fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_over_budget_waits_its_cost_over_the_share() {
        let t0 = Instant::now();
        let mut b = Budget::new(0.05, t0);
        assert_eq!(b.wait(t0), Duration::ZERO);
        // 20 ms of tokens, 25 ms spent: 5 ms in debt, repaid at 5%: 100 ms.
        b.charge(25_000_000, t0);
        let w = b.wait(t0);
        assert!(
            w >= Duration::from_millis(99) && w <= Duration::from_millis(101),
            "{w:?}"
        );
        assert_eq!(b.wait(t0 + Duration::from_millis(101)), Duration::ZERO);
    }

    #[test]
    fn tokens_do_not_pile_up_past_the_cap() {
        let t0 = Instant::now();
        let mut b = Budget::new(0.05, t0);
        let later = t0 + Duration::from_secs(3600);
        b.charge(40_000_000, later);
        assert!(b.wait(later) > Duration::ZERO);
    }
}
