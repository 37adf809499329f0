//! A shipper's counters and state, shared with whoever shows them
//! (`weir ship`'s progress, `weir status`, `/metrics`).
//!
//! The shipper alone writes them; readers take a [`ShipReport`], a
//! consistent-enough copy (each figure is read once, atomically).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// What a shipper is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ShipState {
    /// Connecting to the broker, or finding where to resume.
    Connecting,
    /// Publishing records, or caught up and waiting for more.
    Shipping,
    /// Waiting to retry after an error (see `last_error`).
    Retrying,
    /// Stopped: asked to, or by an error retrying cannot cure.
    Stopped,
}

/// The live counters.
#[derive(Debug)]
pub struct ShipStats {
    shipped: AtomicU64,
    acked_index: AtomicU64,
    in_flight: AtomicU64,
    batches: AtomicU64,
    retries: AtomicU64,
    gap_records: AtomicU64,
    /// The highest index counted in `gap_records`: a gap found again
    /// (the broker still short of it at the next resume) counts once.
    lost_through: AtomicU64,
    state: Mutex<(ShipState, Option<String>)>,
}

impl Default for ShipStats {
    fn default() -> ShipStats {
        ShipStats {
            shipped: AtomicU64::new(0),
            acked_index: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            gap_records: AtomicU64::new(0),
            lost_through: AtomicU64::new(0),
            state: Mutex::new((ShipState::Connecting, None)),
        }
    }
}

/// A copy of the counters, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShipReport {
    /// What the shipper is doing.
    pub state: ShipState,
    /// Records the broker has acknowledged since the shipper started.
    pub shipped: u64,
    /// The last index the broker holds for this host (0: none yet).
    pub acked_index: u64,
    /// Records published and not yet acknowledged.
    pub in_flight: u64,
    /// Batches acknowledged.
    pub batches: u64,
    /// Times the shipper backed off and tried again.
    pub retries: u64,
    /// Records the log dropped before they were shipped (a sink down
    /// longer than retention allowed), counted when found.
    pub gap_records: u64,
    /// The last error, until a batch succeeds after it.
    pub last_error: Option<String>,
}

impl ShipStats {
    /// A copy of the counters.
    pub fn report(&self) -> ShipReport {
        let (state, last_error) = self.lock().clone();
        ShipReport {
            state,
            shipped: self.shipped.load(Ordering::Relaxed),
            acked_index: self.acked_index.load(Ordering::Relaxed),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            gap_records: self.gap_records.load(Ordering::Relaxed),
            last_error,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (ShipState, Option<String>)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_state(&self, s: ShipState) {
        self.lock().0 = s;
    }

    pub(crate) fn failed(&self, e: &crate::Error) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        self.in_flight.store(0, Ordering::Relaxed);
        *self.lock() = (ShipState::Retrying, Some(e.to_string()));
    }

    pub(crate) fn resumed_after(&self, index: u64) {
        self.acked_index.store(index, Ordering::Relaxed);
    }

    pub(crate) fn publishing(&self, n: u64) {
        self.in_flight.store(n, Ordering::Relaxed);
    }

    pub(crate) fn acked(&self, n: u64, last: u64) {
        self.shipped.fetch_add(n, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.in_flight.store(0, Ordering::Relaxed);
        self.acked_index.store(last, Ordering::Relaxed);
        *self.lock() = (ShipState::Shipping, None);
    }

    /// Counts the records `from..=to` as lost, those not counted before.
    pub(crate) fn gap(&self, from: u64, to: u64) {
        let seen = self.lost_through.fetch_max(to, Ordering::Relaxed);
        let start = from.max(seen + 1);
        if to >= start {
            self.gap_records
                .fetch_add(to - start + 1, Ordering::Relaxed);
        }
    }

    #[cfg(test)]
    pub(crate) fn gap_records(&self) -> u64 {
        self.gap_records.load(Ordering::Relaxed)
    }

    pub(crate) fn acked_index(&self) -> u64 {
        self.acked_index.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_found_twice_counts_once() {
        let s = ShipStats::default();
        s.gap(10, 19);
        s.gap(10, 24);
        s.gap(20, 22);
        assert_eq!(s.gap_records(), 15);
        s.gap(30, 30);
        assert_eq!(s.gap_records(), 16);
    }
}
