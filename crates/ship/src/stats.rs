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

impl ShipState {
    /// Its name, as JSON has it.
    pub fn name(self) -> &'static str {
        match self {
            ShipState::Connecting => "connecting",
            ShipState::Shipping => "shipping",
            ShipState::Retrying => "retrying",
            ShipState::Stopped => "stopped",
        }
    }
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
    /// The index through which every record the mask wants is on the
    /// broker: the acked index, or past it the records the mask skips.
    covered: AtomicU64,
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
            covered: AtomicU64::new(0),
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
    /// The index through which the log holds nothing left to ship: the
    /// broker's last index, or past it the records the mask leaves out.
    pub covered_index: u64,
    /// The last error, until a batch succeeds after it; after a stop by
    /// an error, that error.
    pub last_error: Option<String>,
}

impl ShipReport {
    /// Records of the log not yet on the broker (or passed over by the
    /// mask), given the log's last durable index: how far the sink lags.
    pub fn lag(&self, durable_index: u64) -> u64 {
        durable_index.saturating_sub(self.covered_index)
    }
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
            covered_index: self.covered.load(Ordering::Relaxed),
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

    /// An error retrying cannot cure ended the shipper.
    pub(crate) fn stopped_by(&self, e: &crate::Error) {
        self.in_flight.store(0, Ordering::Relaxed);
        *self.lock() = (ShipState::Stopped, Some(e.to_string()));
    }

    pub(crate) fn resumed_after(&self, index: u64) {
        self.acked_index.store(index, Ordering::Relaxed);
        self.covered.store(index, Ordering::Relaxed);
    }

    /// The reader went past `index` with nothing left to publish.
    pub(crate) fn passed(&self, index: u64) {
        self.covered.fetch_max(index, Ordering::Relaxed);
    }

    pub(crate) fn publishing(&self, n: u64) {
        self.in_flight.store(n, Ordering::Relaxed);
    }

    pub(crate) fn acked(&self, n: u64, last: u64) {
        self.shipped.fetch_add(n, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.in_flight.store(0, Ordering::Relaxed);
        self.acked_index.store(last, Ordering::Relaxed);
        self.covered.fetch_max(last, Ordering::Relaxed);
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
    fn state_names_are_the_json_ones() {
        for s in [
            ShipState::Connecting,
            ShipState::Shipping,
            ShipState::Retrying,
            ShipState::Stopped,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }

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

    #[test]
    fn lag_counts_from_what_is_acked_or_passed_over() {
        let s = ShipStats::default();
        s.resumed_after(10);
        assert_eq!(s.report().lag(15), 5);
        s.acked(3, 13);
        assert_eq!(s.report().lag(15), 2);
        // The mask skipped 14 and 15: nothing is owed.
        s.passed(15);
        assert_eq!(s.report().lag(15), 0);
        assert_eq!(s.report().acked_index, 13);
        // A new log history or a restart may resume lower.
        s.resumed_after(4);
        assert_eq!(s.report().lag(15), 11);
        assert_eq!(s.report().lag(2), 0);
    }
}
