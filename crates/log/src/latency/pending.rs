//! The committer's side of the latency histograms: the append times of the
//! records it has placed but not yet written, and of the batches it has
//! written but not yet fsynced.
//!
//! Commit latency is exact, per record: the committer already reads every
//! frame's time to place it (the segment keeps its first and last time), so
//! keeping it costs one push, and the write's end costs one bucket search
//! per record and a handful of atomic adds per batch. The times kept are at
//! most 8 bytes per placed frame of at least 36, and leave with the write.
//!
//! Durable latency is per batch: a record may wait for its fsync up to the
//! sync interval (seconds), and keeping every time that long would take
//! memory in proportion to the append rate. A written batch is kept as its
//! count, its oldest and newest time and the sum of its times, so the sum of
//! durable latencies stays exact while the counts are spread evenly between
//! the batch's oldest and newest record. A batch spans at most a flush
//! interval, so the spread moves a count by at most one bucket boundary.

use super::{Histogram, SharedHistogram};

/// Batches kept between two fsyncs before neighbours are merged. Batches
/// come at most about once per flush interval while records stream, so
/// this is reached only with a long sync interval.
const MAX_SPANS: usize = 64;

/// Written records not yet known to be durable.
#[derive(Debug, Clone, Copy)]
struct Span {
    /// The last index in the span.
    last: u64,
    n: u64,
    oldest: u64,
    newest: u64,
    sum: u128,
}

impl Span {
    fn merge(self, later: Span) -> Span {
        Span {
            last: later.last,
            n: self.n + later.n,
            oldest: self.oldest.min(later.oldest),
            newest: self.newest.max(later.newest),
            sum: self.sum + later.sum,
        }
    }
}

/// The committer's record of what is waiting.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Append times (ns since the epoch) of the records placed and not yet
    /// written, in index order.
    placed: Vec<u64>,
    /// Written batches not yet fsynced, oldest first.
    unsynced: Vec<Span>,
}

impl Pending {
    /// A record was placed in the active segment.
    #[inline]
    pub(crate) fn placed(&mut self, time_ns: u64) {
        self.placed.push(time_ns);
    }

    /// Every placed record, the last of them `upto`, has been written at
    /// `now_ns`: counts their commit latencies into `into`.
    pub(crate) fn committed(&mut self, upto: u64, now_ns: u64, into: &SharedHistogram) {
        if self.placed.is_empty() {
            return;
        }
        let mut h = Histogram::default();
        let (mut oldest, mut newest, mut sum) = (u64::MAX, 0u64, 0u128);
        let mut latencies = 0u128;
        // Records are placed in index order, and their times nearly follow
        // it, so most fall in the bucket of the record before: checking
        // that bucket's bounds first spares the search for nearly all.
        let (mut b, mut lo, mut hi) = (0, 0, 0);
        for &t in &self.placed {
            // A wall clock stepped back reads as no wait at all.
            let ns = now_ns.saturating_sub(t);
            if ns <= lo || ns > hi {
                b = Histogram::bucket_of(ns);
                (lo, hi) = Histogram::bucket_bounds(b);
            }
            h.buckets[b] += 1;
            latencies += u128::from(ns);
            oldest = oldest.min(t);
            newest = newest.max(t);
            sum += u128::from(t);
        }
        h.sum_ns = latencies;
        into.add(&h);
        let span = Span {
            last: upto,
            n: self.placed.len() as u64,
            oldest,
            newest,
            sum,
        };
        self.placed.clear();
        if self.placed.capacity() > 1 << 16 {
            // A burst's vector is not kept for the quiet that follows it.
            self.placed.shrink_to(1 << 16);
        }
        if self.unsynced.len() >= MAX_SPANS {
            self.halve();
        }
        self.unsynced.push(span);
    }

    /// Merges neighbouring spans pairwise: the sums and counts stay exact,
    /// only the spread gets coarser.
    fn halve(&mut self) {
        let merged: Vec<Span> = self
            .unsynced
            .chunks(2)
            .map(|c| {
                c.iter()
                    .copied()
                    .reduce(Span::merge)
                    .expect("chunks are non-empty")
            })
            .collect();
        self.unsynced = merged;
    }

    /// Every written record up to `upto` was fsynced at `now_ns`: counts
    /// their durable latencies into `into`.
    pub(crate) fn durable(&mut self, upto: u64, now_ns: u64, into: &SharedHistogram) {
        let done = self.unsynced.partition_point(|s| s.last <= upto);
        if done == 0 {
            return;
        }
        let mut h = Histogram::default();
        for s in self.unsynced.drain(..done) {
            let sum = (u128::from(now_ns) * u128::from(s.n)).saturating_sub(s.sum);
            h.observe_spread(
                s.n,
                now_ns.saturating_sub(s.newest),
                now_ns.saturating_sub(s.oldest),
                sum,
            );
        }
        into.add(&h);
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy as _;

    use super::*;
    use crate::latency::BOUNDS_NS;

    #[test]
    fn commit_latencies_are_per_record_and_durable_ones_keep_the_sum() {
        let (commit, durable) = (SharedHistogram::default(), SharedHistogram::default());
        let mut p = Pending::default();
        // Appended at 1000, 2000 and 9000 ns; written at 10_000 ns.
        for t in [1_000, 2_000, 9_000] {
            p.placed(t);
        }
        p.committed(3, 10_000, &commit);
        let c = commit.snapshot();
        // 9000 and 8000 ns are in (3 µs, 10 µs], 1000 ns in (0, 1 µs].
        assert_eq!((c.buckets[0], c.buckets[2], c.count()), (1, 2, 3), "{c:?}");
        assert_eq!(c.sum_ns, 9_000 + 8_000 + 1_000);
        // Nothing is durable before the fsync covers it.
        p.durable(2, 20_000, &durable);
        assert_eq!(durable.snapshot().count(), 0);
        p.durable(3, 1_000_000, &durable);
        let d = durable.snapshot();
        assert_eq!(d.count(), 3);
        assert_eq!(d.sum_ns, 999_000 + 998_000 + 991_000);
        // All three waited between 991 µs and 999 µs: one bucket.
        assert_eq!(d.buckets[6], 3, "{d:?}");
        // Drained: a later fsync counts nothing again.
        p.durable(10, 2_000_000, &durable);
        assert_eq!(durable.snapshot(), d);
    }

    proptest::proptest! {
        /// The committer's shortcut (the bucket of the record before)
        /// counts every latency where `Histogram::observe` would.
        #[test]
        fn commit_latencies_fall_where_observe_puts_them(
            // Latencies anywhere, right at a bound or 1 ns either side of
            // one, and times after `now` (a clock stepped back).
            waits in proptest::collection::vec(
                proptest::prop_oneof![
                    0i64..40_000_000_000,
                    (0..BOUNDS_NS.len(), -1i64..=1)
                        .prop_map(|(b, d)| BOUNDS_NS[b] as i64 + d),
                    -1_000i64..0,
                ],
                0..200,
            ),
            sorted in proptest::bool::ANY,
        ) {
            let now = 50_000_000_000u64;
            let mut times: Vec<u64> = waits.iter().map(|&w| (now as i64 - w) as u64).collect();
            if sorted {
                times.sort_unstable();
            }
            let commit = SharedHistogram::default();
            let mut p = Pending::default();
            let mut want = Histogram::default();
            for &t in &times {
                p.placed(t);
                want.observe(now.saturating_sub(t));
            }
            p.committed(times.len() as u64, now, &commit);
            proptest::prop_assert_eq!(commit.snapshot(), want);
        }
    }

    #[test]
    fn many_batches_between_fsyncs_are_merged_without_losing_counts() {
        let (commit, durable) = (SharedHistogram::default(), SharedHistogram::default());
        let mut p = Pending::default();
        let batches = 3 * MAX_SPANS as u64 + 5;
        for i in 1..=batches {
            p.placed(i * 1_000);
            p.placed(i * 1_000 + 500);
            p.committed(2 * i, i * 1_000 + 600, &commit);
        }
        assert!(p.unsynced.len() <= MAX_SPANS, "{}", p.unsynced.len());
        let now = 10_000_000u64;
        p.durable(2 * batches, now, &durable);
        let d = durable.snapshot();
        assert_eq!(d.count(), 2 * batches);
        let want: u128 = (1..=batches)
            .flat_map(|i| [i * 1_000, i * 1_000 + 500])
            .map(|t| u128::from(now - t))
            .sum();
        assert_eq!(d.sum_ns, want);
        assert_eq!(commit.snapshot().count(), 2 * batches);
        assert!(p.unsynced.is_empty());
    }
}
