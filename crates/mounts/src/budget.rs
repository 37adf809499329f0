//! The CPU budget for whole-table readings.
//!
//! Re-reading the whole table is O(mounts); in a storm, doing it per change
//! is what made systemd take 20 s for 2000 mounts (seed 003). A token bucket
//! holds the readings to a share of one core: each reading costs the CPU
//! time it really took (this thread's clock), and tokens come back at
//! `share` ns per ns of wall time. The delay a reading can suffer is thus
//! bounded by its own cost divided by the share.
//!
//! The bucket lives on the tracker's thread; [`BudgetGauge`] lets other
//! threads (`Tracker::stats`, the daemon's metrics) read its level now.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
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

    /// Shows the bucket's state in `gauge`, which must be given every
    /// change of it (`new` and each `charge`; refills follow from the
    /// clock).
    pub(crate) fn publish(&self, gauge: &BudgetGauge) {
        // The tokens rise at `share` per ns from the moment they were zero,
        // so that moment, with the share and the cap, is the whole state.
        let zero_at = self.last.checked_duration_since(gauge.base).map_or_else(
            || -(gauge.base.duration_since(self.last).as_nanos() as f64),
            |d| d.as_nanos() as f64,
        ) - self.tokens_ns / self.share;
        gauge.share.store(self.share.to_bits(), Ordering::Relaxed);
        gauge.cap_ns.store(self.cap_ns.to_bits(), Ordering::Relaxed);
        gauge.zero_at_ns.store(zero_at as i64, Ordering::Release);
    }
}

/// A [`Budget`]'s level as other threads see it. One atomic carries the
/// moving part (when the tokens were, or will be, zero), so a reader never
/// sees half of an update; the share and the cap are set once.
#[derive(Debug)]
pub(crate) struct BudgetGauge {
    base: Instant,
    /// f64 bits; 0 until the first `publish`.
    share: AtomicU64,
    /// f64 bits.
    cap_ns: AtomicU64,
    /// ns after `base`, negative before it.
    zero_at_ns: AtomicI64,
}

impl Default for BudgetGauge {
    fn default() -> Self {
        BudgetGauge {
            base: Instant::now(),
            share: AtomicU64::new(0),
            cap_ns: AtomicU64::new(0),
            zero_at_ns: AtomicI64::new(0),
        }
    }
}

impl BudgetGauge {
    /// The tokens at `now`, ns of CPU time (negative: overspent, readings
    /// wait), and the cap. Zeros before the budget is first published.
    pub(crate) fn level(&self, now: Instant) -> (i64, u64) {
        let zero_at = self.zero_at_ns.load(Ordering::Acquire);
        let share = f64::from_bits(self.share.load(Ordering::Relaxed));
        let cap = f64::from_bits(self.cap_ns.load(Ordering::Relaxed));
        if share <= 0.0 {
            return (0, 0);
        }
        let since_base = now.saturating_duration_since(self.base).as_nanos() as f64;
        let tokens = ((since_base - zero_at as f64) * share).min(cap);
        (tokens as i64, cap as u64)
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
    fn the_gauge_shows_the_level_now_debt_included() {
        let g = BudgetGauge::default();
        assert_eq!(g.level(Instant::now()), (0, 0));
        let t0 = g.base + Duration::from_secs(1);
        let mut b = Budget::new(0.05, t0);
        b.publish(&g);
        // Full, and it stays full however long nothing is charged.
        assert_eq!(g.level(t0), (20_000_000, 20_000_000));
        assert_eq!(g.level(t0 + Duration::from_secs(60)).0, 20_000_000);
        // 25 ms spent: 5 ms of debt, back to zero 100 ms later, then up at
        // 5% (1 ms of tokens per 20 ms).
        b.charge(25_000_000, t0);
        b.publish(&g);
        let near = |got: i64, want: i64| (got - want).abs() <= 1_000;
        assert!(near(g.level(t0).0, -5_000_000), "{:?}", g.level(t0));
        let later = |ms| g.level(t0 + Duration::from_millis(ms)).0;
        assert!(near(later(50), -2_500_000), "{}", later(50));
        assert!(near(later(100), 0), "{}", later(100));
        assert!(near(later(120), 1_000_000), "{}", later(120));
        // A budget older than the gauge (its moment before the base).
        let g2 = BudgetGauge::default();
        let mut old = Budget::new(0.005, g2.base - Duration::from_secs(1));
        old.charge(30_000_000, g2.base - Duration::from_secs(1));
        old.publish(&g2);
        // -10 ms a second ago, 5 ms of refill since.
        assert!(
            near(g2.level(g2.base).0, -5_000_000),
            "{:?}",
            g2.level(g2.base)
        );
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
