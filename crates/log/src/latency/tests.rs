//! Tests of the histogram: bucket boundaries, the even spread of a batch,
//! and consistent snapshots while the writer adds.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use proptest::prelude::*;

use super::*;

#[test]
fn a_bound_belongs_to_its_own_bucket_and_one_more_ns_to_the_next() {
    assert_eq!(Histogram::bucket_of(0), 0);
    for (i, &b) in BOUNDS_NS.iter().enumerate() {
        assert_eq!(Histogram::bucket_of(b), i, "bound {b}");
        assert_eq!(Histogram::bucket_of(b + 1), i + 1, "bound {b} + 1");
        assert_eq!(Histogram::bucket_of(b - 1), i, "bound {b} - 1");
    }
    assert_eq!(Histogram::bucket_of(30_000_000_001), BUCKETS - 1);
    assert_eq!(Histogram::bucket_of(u64::MAX), BUCKETS - 1);
    // 1 µs to 30 s, each bound 3 or 10/3 times the last.
    assert_eq!((BOUNDS_NS[0], BOUNDS_NS[15]), (1_000, 30_000_000_000));
    assert!(
        BOUNDS_NS
            .windows(2)
            .all(|w| w[1] == 3 * w[0] || 3 * w[1] == 10 * w[0])
    );
}

#[test]
fn cumulative_counts_rise_to_the_count() {
    let mut h = Histogram::default();
    for ns in [500, 1_000, 1_001, 2_000_000, 40_000_000_000, u64::MAX] {
        h.observe(ns);
    }
    let c: Vec<(Option<u64>, u64)> = h.cumulative().collect();
    assert_eq!(c.len(), BUCKETS);
    assert_eq!(c[0], (Some(1_000), 2));
    assert_eq!(c[1], (Some(3_000), 3));
    assert_eq!(c[7], (Some(3_000_000), 4));
    assert_eq!(c[15], (Some(30_000_000_000), 4));
    assert_eq!(c[16], (None, 6));
    assert_eq!(h.count(), 6);
    assert_eq!(
        h.sum_ns,
        500 + 1_000 + 1_001 + 2_000_000 + 40_000_000_000 + u128::from(u64::MAX)
    );
}

#[test]
fn a_spread_splits_by_the_share_of_the_range_each_bucket_covers() {
    let mut h = Histogram::default();
    // [0, 3000]: a third at or below 1 µs, two thirds in (1 µs, 3 µs].
    h.observe_spread(3_000, 0, 3_000, 4_500_000);
    assert_eq!(
        (h.buckets[0], h.buckets[1], h.count()),
        (1_000, 2_000, 3_000)
    );
    assert_eq!(h.sum_ns, 4_500_000);
    // A zero-width range is one bucket; reversed bounds are put in order.
    let mut one = Histogram::default();
    one.observe_spread(7, 50_000, 50_000, 350_000);
    assert_eq!((one.buckets[4], one.count()), (7, 7));
    let mut rev = Histogram::default();
    rev.observe_spread(3_000, 3_000, 0, 0);
    assert_eq!(rev.buckets, h.buckets);
}

proptest! {
    #[test]
    fn a_spread_counts_exactly_n_within_its_range(
        n in 0u64..1_000_000,
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let mut h = Histogram::default();
        h.observe_spread(n, a, b, 0);
        prop_assert_eq!(h.count(), n);
        let (first, last) = (Histogram::bucket_of(a.min(b)), Histogram::bucket_of(a.max(b)));
        for (i, &c) in h.buckets.iter().enumerate() {
            prop_assert!(c == 0 || (first..=last).contains(&i), "bucket {} of {:?}", i, h);
        }
    }
}

#[test]
fn shared_adds_up_and_snapshots_are_never_torn() {
    let shared = Arc::new(SharedHistogram::default());
    let stop = Arc::new(AtomicBool::new(false));
    // Every batch is of 5 µs latencies, so any consistent snapshot has
    // sum == 5000 × count; a torn one (buckets of one batch, the sum of
    // another) would not.
    let reader = {
        let (shared, stop) = (shared.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seen = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let h = shared.snapshot();
                assert_eq!(h.sum_ns, 5_000 * u128::from(h.count()), "{h:?}");
                assert!(h.count() >= seen, "went back: {h:?}");
                seen = h.count();
            }
        })
    };
    let mut batch = Histogram::default();
    for _ in 0..3 {
        batch.observe(5_000);
    }
    for _ in 0..200_000 {
        shared.add(&batch);
    }
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    let h = shared.snapshot();
    assert_eq!((h.count(), h.buckets[2]), (600_000, 600_000));
    // An empty tally changes nothing (and does not bump the sequence).
    shared.add(&Histogram::default());
    assert_eq!(shared.snapshot(), h);
}

#[test]
fn the_sum_carries_past_64_bits() {
    let shared = SharedHistogram::default();
    let mut big = Histogram::default();
    big.observe(u64::MAX);
    shared.add(&big);
    shared.add(&big);
    let h = shared.snapshot();
    assert_eq!(h.sum_ns, 2 * u128::from(u64::MAX));
    assert_eq!(h.buckets[BUCKETS - 1], 2);
}
