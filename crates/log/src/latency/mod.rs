//! Latency histograms: how long records wait from their append to the
//! committer's write (committed) and to the fsync after it (durable).
//!
//! The buckets are fixed, two per decade (1 and 3) from 1 µs to 30 s, so
//! every log reports comparable numbers and a Prometheus exposition needs no
//! configuration. The committer is the only writer: it tallies a batch into
//! a plain [`Histogram`] and adds that to the shared atomics once, inside a
//! sequence counter, so a reader gets a consistent snapshot (its sum and its
//! count from the same batches) without a lock and the committer never
//! waits for a reader. `pending` holds the committer's side: which records
//! wait to be committed or made durable.

pub(crate) mod pending;

use std::sync::atomic::{AtomicU64, Ordering, fence};

use crossbeam_utils::Backoff;

/// See [`Histogram::BOUNDS_NS`].
pub(crate) const BOUNDS_NS: [u64; 16] = [
    1_000,
    3_000,
    10_000,
    30_000,
    100_000,
    300_000,
    1_000_000,
    3_000_000,
    10_000_000,
    30_000_000,
    100_000_000,
    300_000_000,
    1_000_000_000,
    3_000_000_000,
    10_000_000_000,
    30_000_000_000,
];

/// Buckets in a [`Histogram`]: one per bound plus the overflow bucket.
pub(crate) const BUCKETS: usize = BOUNDS_NS.len() + 1;
// `Histogram::buckets` spells the length out for its readers.
const _: () = assert!(BUCKETS == 17);

/// A snapshot of a latency histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Histogram {
    /// Observations per bucket, not cumulative: `buckets[i]` counts the
    /// latencies in `(BOUNDS_NS[i-1], BOUNDS_NS[i]]` (see
    /// [`Histogram::BOUNDS_NS`]), and the last one those above every bound.
    pub buckets: [u64; 17],
    /// The sum of the latencies, ns. 128 bits: a busy log's total waiting
    /// time passes 2^64 ns (585 years) within weeks.
    pub sum_ns: u128,
}

impl Histogram {
    /// Upper bounds (inclusive, ns) of the finite buckets, 1 µs to 30 s. A
    /// latency above the last one falls in the overflow bucket
    /// (Prometheus' `le="+Inf"`).
    pub const BOUNDS_NS: [u64; 16] = BOUNDS_NS;

    /// The bucket a latency falls in: the first whose bound is at least
    /// `ns`, or the overflow bucket.
    pub fn bucket_of(ns: u64) -> usize {
        BOUNDS_NS.partition_point(|&b| b < ns)
    }

    /// The bounds `(lo, hi)` of bucket `b`: it holds the latencies above
    /// `lo` and at most `hi` (`u64::MAX` for the overflow bucket), and
    /// bucket 0 holds 0 as well.
    pub(crate) fn bucket_bounds(b: usize) -> (u64, u64) {
        let lo = if b == 0 { 0 } else { BOUNDS_NS[b - 1] };
        (lo, BOUNDS_NS.get(b).copied().unwrap_or(u64::MAX))
    }

    /// Counts one latency.
    pub fn observe(&mut self, ns: u64) {
        self.buckets[Self::bucket_of(ns)] += 1;
        self.sum_ns += u128::from(ns);
    }

    /// The number of observations.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The sum of the latencies in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_ns as f64 / 1e9
    }

    /// The cumulative counts, Prometheus-style: for each bound (ns; `None`
    /// for `+Inf`), the observations at or below it. The last is
    /// [`Histogram::count`].
    pub fn cumulative(&self) -> impl Iterator<Item = (Option<u64>, u64)> + '_ {
        let bounds = BOUNDS_NS.iter().map(|&b| Some(b)).chain([None]);
        bounds.zip(self.buckets.iter()).scan(0u64, |acc, (b, &n)| {
            *acc += n;
            Some((b, *acc))
        })
    }

    /// Counts `n` latencies spread evenly over `[lo, hi]` whose sum is
    /// `sum_ns`: a batch known by its oldest and newest record only. The
    /// counts are split between buckets by the share of the range each
    /// covers, rounded so that exactly `n` are counted.
    pub(crate) fn observe_spread(&mut self, n: u64, lo: u64, hi: u64, sum_ns: u128) {
        if n == 0 {
            return;
        }
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        self.sum_ns += sum_ns;
        let (first, last) = (Self::bucket_of(lo), Self::bucket_of(hi));
        let width = u128::from(hi - lo);
        let mut given = 0u64;
        // Every bound in first..last lies in [lo, hi), so `width` > 0 here
        // and each cumulative share is at most `n`.
        for (b, &bound) in BOUNDS_NS.iter().enumerate().take(last).skip(first) {
            let upto = (u128::from(bound - lo) * u128::from(n) / width) as u64;
            self.buckets[b] += upto - given;
            given = upto;
        }
        self.buckets[last] += n - given;
    }

    fn is_empty(&self) -> bool {
        self.buckets.iter().all(|&n| n == 0)
    }
}

/// A histogram shared between its one writer (the committer) and any
/// number of readers.
#[derive(Debug, Default)]
pub(crate) struct SharedHistogram {
    /// Odd while the writer is adding: a seqlock made of atomics only.
    seq: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
    sum_lo: AtomicU64,
    sum_hi: AtomicU64,
}

impl SharedHistogram {
    /// Adds a batch's tally. Only one thread may call this (the committer);
    /// readers are never waited for.
    pub(crate) fn add(&self, h: &Histogram) {
        if h.is_empty() {
            return;
        }
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // Orders the odd sequence before the data: a reader that sees any
        // of the new data sees the sequence changed.
        fence(Ordering::Release);
        for (a, &n) in self.buckets.iter().zip(&h.buckets) {
            if n > 0 {
                a.fetch_add(n, Ordering::Relaxed);
            }
        }
        let sum = self.sum() + h.sum_ns;
        self.sum_lo.store(sum as u64, Ordering::Relaxed);
        self.sum_hi.store((sum >> 64) as u64, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    fn sum(&self) -> u128 {
        let lo = self.sum_lo.load(Ordering::Relaxed);
        let hi = self.sum_hi.load(Ordering::Relaxed);
        (u128::from(hi) << 64) | u128::from(lo)
    }

    /// A consistent snapshot: every bucket and the sum from the same set of
    /// batches. Retries while the writer is mid-batch (a few dozen stores).
    pub(crate) fn snapshot(&self) -> Histogram {
        let backoff = Backoff::new();
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1.is_multiple_of(2) {
                let mut h = Histogram::default();
                for (b, a) in h.buckets.iter_mut().zip(&self.buckets) {
                    *b = a.load(Ordering::Relaxed);
                }
                h.sum_ns = self.sum();
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s1 {
                    return h;
                }
            }
            backoff.snooze();
        }
    }
}

#[cfg(test)]
mod tests;
