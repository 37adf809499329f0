//! Tests of retention's plan on its own: consumers, segments, limits and
//! a time in, evictions and removals out, with no log behind them.

use std::path::PathBuf;
use std::time::Duration;

use proptest::prelude::*;

use super::*;

const SEC: u64 = 1_000_000_000;

fn no_limits() -> Retention {
    Retention {
        max_bytes: u64::MAX,
        max_age: None,
        keep_bytes: 0,
        keep_age: Duration::ZERO,
        on_full: FullPolicy::EvictMostIdle,
        max_idle_records: None,
        max_idle_time: None,
    }
}

/// Segments of `bytes` each, ten records each from index 1; the last is
/// the unsealed active one.
fn segments(n: u64, bytes: u64) -> Vec<SegEntry> {
    (0..n)
        .map(|k| SegEntry {
            base: 1 + 10 * k,
            path: PathBuf::from(format!("/log/{k}")),
            last: (k + 1 < n).then_some(10 * (k + 1)),
            bytes,
            last_time_ns: 0,
            time_read: false,
        })
        .collect()
}

fn cursor(name: &str, cleared: u64, last_active_ns: u64) -> Cursor<'_> {
    Cursor {
        name,
        cleared,
        last_active_ns,
        waiting_since: Some(last_active_ns),
        unresolved: false,
    }
}

fn inputs<'a>(
    cursors: &'a [Cursor<'a>],
    segs: &'a [SegEntry],
    limits: &'a Retention,
) -> Inputs<'a> {
    Inputs {
        cursors,
        segments: segs,
        limits,
        now: 1000 * SEC,
        last: segs.last().map_or(0, |s| s.base + 5),
        opening: 0,
        reserve: 0,
    }
}

fn bases(p: &Plan) -> Vec<u64> {
    p.remove.iter().map(|r| r.base).collect()
}

#[test]
fn segments_every_consumer_cleared_go_and_the_newest_never() {
    let segs = segments(4, 100);
    let limits = no_limits();
    // Cleared through the second segment's last index (20).
    let cs = [cursor("a", 20, 0), cursor("b", 25, 0)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(bases(&p), [1, 11]);
    assert!(p.evict.is_empty());
    assert_eq!(p.total, 200);
    // Without consumers nothing holds them, but nothing asks them gone
    // either: no limit is reached.
    let p = plan(&inputs(&[], &segs, &limits));
    assert_eq!(bases(&p), [] as [u64; 0]);
    // Cleared past everything: all sealed ones go, the active one stays.
    let cs = [cursor("a", 35, 0)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(bases(&p), [1, 11, 21]);
}

#[test]
fn a_consumer_too_far_behind_is_evicted_and_frees_its_segments() {
    let segs = segments(4, 100);
    let limits = Retention {
        max_idle_records: Some(20),
        ..no_limits()
    };
    // Last is 36: "slow" is 31 behind, "fast" 6.
    let cs = [cursor("slow", 5, 999 * SEC), cursor("fast", 30, 0)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(p.evict, [("slow".to_owned(), Reason::IdleRecords)]);
    assert_eq!(bases(&p), [1, 11, 21]);
}

#[test]
fn idle_time_counts_only_while_a_record_waits() {
    let segs = segments(2, 100);
    let limits = Retention {
        max_idle_time: Some(Duration::from_secs(60)),
        ..no_limits()
    };
    let long_ago = 100 * SEC;
    let mut quiet = cursor("quiet", 5, long_ago);
    // A record has waited for it only a second.
    quiet.waiting_since = Some(999 * SEC);
    let mut unknown = cursor("unknown", 5, long_ago);
    unknown.waiting_since = None;
    let mut masked = cursor("masked", 5, long_ago);
    masked.unresolved = true;
    let idle = cursor("idle", 5, long_ago);
    let caught_up = cursor("caught-up", 16, long_ago);
    let cs = [quiet, unknown, masked, idle, caught_up];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(p.evict, [("idle".to_owned(), Reason::IdleTime)]);
    // A record that cannot be read has waited since ever.
    let mut dropped = cursor("dropped", 5, long_ago);
    dropped.waiting_since = Some(0);
    let p = plan(&inputs(&[dropped], &segs, &limits));
    assert_eq!(p.evict, [("dropped".to_owned(), Reason::IdleTime)]);
}

#[test]
fn at_the_size_limit_the_most_idle_consumer_needing_a_segment_goes() {
    let segs = segments(4, 100);
    let limits = Retention {
        max_bytes: 250,
        ..no_limits()
    };
    // Both need the first segment; "b" was active longer ago. "c" needs
    // only the third, which can stay.
    let cs = [cursor("a", 3, 50), cursor("b", 8, 40), cursor("c", 25, 0)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(
        p.evict,
        [
            ("b".to_owned(), Reason::SizeLimit),
            ("a".to_owned(), Reason::SizeLimit)
        ]
    );
    // 400 bytes: the first two go, which leaves 200.
    assert_eq!(bases(&p), [1, 11]);
    assert!(p.remove.iter().all(|r| !r.dropped));
    assert_eq!(p.total, 200);
}

#[test]
fn drop_oldest_drops_what_consumers_need_and_says_what_they_had_cleared() {
    let segs = segments(4, 100);
    let limits = Retention {
        max_bytes: 250,
        on_full: FullPolicy::DropOldest,
        ..no_limits()
    };
    let cs = [cursor("a", 3, 50), cursor("b", 8, 40)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert!(p.evict.is_empty());
    assert_eq!(p.drops, [(3, 10), (3, 20)]);
    assert_eq!(bases(&p), [1, 11]);
    assert!(p.remove.iter().all(|r| r.dropped));
}

#[test]
fn the_spares_room_removes_what_nobody_needs_but_evicts_no_one() {
    let segs = segments(3, 100);
    let limits = Retention {
        max_bytes: 300,
        ..no_limits()
    };
    // 300 bytes of segments fit; with the spare's room they do not, and
    // the oldest, which nobody needs, goes.
    let p = plan(&inputs(&[], &segs, &limits));
    assert!(p.remove.is_empty());
    let mut i = inputs(&[], &segs, &limits);
    i.reserve = 100;
    let p = plan(&i);
    assert_eq!(bases(&p), [1]);
    assert_eq!(p.total, 300);
    // A consumer that needs it is not evicted for the spare's room.
    let cs = [cursor("a", 2, 0)];
    let mut i = inputs(&cs, &segs, &limits);
    i.reserve = 100;
    let p = plan(&i);
    assert!(p.remove.is_empty() && p.evict.is_empty());
    assert_eq!(p.total, 400);
}

#[test]
fn segments_age_out_only_without_consumers() {
    let mut segs = segments(3, 100);
    segs[0].last_time_ns = 10 * SEC;
    segs[1].last_time_ns = 990 * SEC;
    let limits = Retention {
        max_age: Some(Duration::from_secs(60)),
        ..no_limits()
    };
    let p = plan(&inputs(&[], &segs, &limits));
    assert_eq!(bases(&p), [1]);
    let cs = [cursor("a", 0, 999 * SEC)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert!(p.remove.is_empty());
    // A segment whose time is not known (0) is not aged.
    segs[0].last_time_ns = 0;
    let p = plan(&inputs(&[], &segs, &limits));
    assert!(p.remove.is_empty());
}

/// Five segments of 100 bytes, the newest unsealed, whose newest records
/// are 40, 30, 20, 10 and 0 s old.
fn recent_segments() -> Vec<SegEntry> {
    let mut segs = segments(5, 100);
    for (k, s) in segs.iter_mut().enumerate() {
        s.last_time_ns = (960 + 10 * k as u64) * SEC;
    }
    segs
}

/// A floor of `bytes` and `age` seconds, without limits.
fn floor(bytes: u64, age: u64) -> Retention {
    Retention {
        keep_bytes: bytes,
        keep_age: Duration::from_secs(age),
        ..no_limits()
    }
}

#[test]
fn the_floor_keeps_the_newest_history_every_consumer_cleared() {
    let segs = recent_segments();
    // "indexer" has cleared every record, as a consumer whose mask
    // excludes them all is moved past them.
    let cs = [cursor("indexer", 45, 0)];
    // Without a floor every sealed segment goes.
    let p = plan(&inputs(&cs, &segs, &no_limits()));
    assert_eq!(bases(&p), [1, 11, 21, 31]);
    // The newest 250 bytes: the segments with fewer than 250 bytes newer
    // than them, 21 (200 newer) and 31 (100 newer), stay.
    let p = plan(&inputs(&cs, &segs, &floor(250, 3600)));
    assert_eq!(bases(&p), [1, 11]);
    assert_eq!(p.total, 300);
    assert!(p.evict.is_empty() && p.drops.is_empty());
    // 201 bytes still reach into segment 21; 200 do not.
    assert_eq!(
        bases(&plan(&inputs(&cs, &segs, &floor(201, 3600)))),
        [1, 11]
    );
    assert_eq!(
        bases(&plan(&inputs(&cs, &segs, &floor(200, 3600)))),
        [1, 11, 21]
    );
    // A floor of 0 bytes or 0 s is no floor.
    assert_eq!(
        bases(&plan(&inputs(&cs, &segs, &floor(0, 3600)))),
        [1, 11, 21, 31]
    );
    assert_eq!(
        bases(&plan(&inputs(&cs, &segs, &floor(250, 0)))),
        [1, 11, 21, 31]
    );
    // Kept segments are not a stop for consumers that still need more:
    // nothing a consumer needs is removed in any case.
    let cs = [cursor("indexer", 45, 0), cursor("slow", 15, 0)];
    assert_eq!(bases(&plan(&inputs(&cs, &segs, &floor(250, 3600)))), [1]);
}

#[test]
fn the_floor_keeps_history_younger_than_its_age_only() {
    let mut segs = recent_segments();
    let cs = [cursor("indexer", 45, 0)];
    // Every byte, for 25 s: segment 21's newest record is 20 s old, 11's
    // 30 s.
    let p = plan(&inputs(&cs, &segs, &floor(u64::MAX, 25)));
    assert_eq!(bases(&p), [1, 11]);
    // Exactly as old as the age: no longer younger.
    let p = plan(&inputs(&cs, &segs, &floor(u64::MAX, 20)));
    assert_eq!(bases(&p), [1, 11, 21]);
    // Removals are a prefix: an old segment behind a young one stays.
    segs[0].last_time_ns = 999 * SEC;
    let p = plan(&inputs(&cs, &segs, &floor(u64::MAX, 25)));
    assert_eq!(bases(&p), [] as [u64; 0]);
    // A time not known is judged by size alone.
    let mut segs = recent_segments();
    segs[1].last_time_ns = 0;
    let p = plan(&inputs(&cs, &segs, &floor(u64::MAX, 25)));
    assert_eq!(bases(&p), [1]);
    let p = plan(&inputs(&cs, &segs, &floor(250, 25)));
    assert_eq!(bases(&p), [1, 11]);
    // `Duration::MAX` keeps by size alone, however old.
    let r = Retention {
        keep_age: Duration::MAX,
        ..floor(250, 0)
    };
    let mut old = recent_segments();
    for s in &mut old {
        s.last_time_ns = 1;
    }
    assert_eq!(bases(&plan(&inputs(&cs, &old, &r))), [1, 11]);
}

#[test]
fn the_size_limit_wins_over_the_floor() {
    let segs = recent_segments();
    let cs = [cursor("indexer", 45, 0)];
    // 500 bytes against a limit of 250, all of them inside the floor:
    // segments go until the log fits, and the floor keeps the rest.
    let limits = Retention {
        max_bytes: 250,
        ..floor(u64::MAX, 3600)
    };
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(bases(&p), [1, 11, 21]);
    assert_eq!(p.total, 200);
    // The spare's room counts as it does without a floor.
    let mut i = inputs(&cs, &segs, &limits);
    i.reserve = 100;
    assert_eq!(bases(&plan(&i)), [1, 11, 21, 31]);
    // Without consumers, too.
    let p = plan(&inputs(&[], &segs, &limits));
    assert_eq!(bases(&p), [1, 11, 21]);
    // Over the limit with a consumer that needs the oldest segment: it is
    // evicted as without a floor, and what it held goes up to the limit.
    let cs = [cursor("indexer", 45, 0), cursor("slow", 3, 0)];
    let p = plan(&inputs(&cs, &segs, &limits));
    assert_eq!(p.evict, [("slow".to_owned(), Reason::SizeLimit)]);
    assert_eq!(bases(&p), [1, 11, 21]);
}

#[test]
fn the_age_limit_wins_over_the_floor() {
    let segs = recent_segments();
    // Without consumers, segments older than 25 s go, though the floor
    // would keep a minute of history.
    let limits = Retention {
        max_age: Some(Duration::from_secs(25)),
        ..floor(u64::MAX, 60)
    };
    let p = plan(&inputs(&[], &segs, &limits));
    assert_eq!(bases(&p), [1, 11]);
}

#[test]
fn limits_of_centuries_do_not_wrap() {
    // Regression: `as_nanos() as u64` wrapped a limit of 600 years to
    // about 16 years, and larger ones to anything, evicting early.
    let centuries = Duration::from_secs(600 * 365 * 24 * 3600);
    assert!((centuries.as_nanos() as u64) < nanos(Duration::from_secs(20 * 365 * 24 * 3600)));
    assert_eq!(nanos(centuries), u64::MAX);
    assert_eq!(nanos(Duration::from_secs(3)), 3_000_000_000);
}

/// A pass's inputs, owned: consumers as `(cleared, last_active_ns,
/// waiting_since, unresolved)`.
#[derive(Debug, Clone)]
struct Case {
    cursors: Vec<(u64, u64, Option<u64>, bool)>,
    segments: Vec<SegEntry>,
    limits: Retention,
    now: u64,
    last: u64,
    opening: u64,
    reserve: u64,
}

fn arb_case() -> impl Strategy<Value = Case> {
    let segs = prop::collection::vec((1u64..20, 1u64..1000, 0u64..2000), 0..8);
    let cursors = prop::collection::vec(
        (
            0u64..200,
            0u64..2000,
            prop::option::of(0u64..2000),
            any::<bool>(),
        ),
        0..6,
    );
    let keep_age = prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::MAX),
        (0u64..2000).prop_map(Duration::from_nanos),
    ];
    let limits = (
        prop::option::of(0u64..5000),
        prop::option::of(0u64..1000),
        prop::option::of(0u64..5000),
        keep_age,
        any::<bool>(),
        prop::option::of(0u64..200),
        prop::option::of(0u64..1000),
    )
        .prop_map(
            |(max_bytes, age, keep_bytes, keep_age, drop, records, idle)| Retention {
                max_bytes: max_bytes.unwrap_or(u64::MAX),
                max_age: age.map(Duration::from_nanos),
                keep_bytes: keep_bytes.unwrap_or(0),
                keep_age,
                on_full: if drop {
                    FullPolicy::DropOldest
                } else {
                    FullPolicy::EvictMostIdle
                },
                max_idle_records: records,
                max_idle_time: idle.map(Duration::from_nanos),
            },
        );
    (segs, cursors, limits, 0u64..3000, 0u64..2000, 0u64..2000).prop_map(
        |(segs, cursors, limits, now, opening, reserve)| {
            // Consecutive segments; every one but the newest sealed.
            let mut base = 1;
            let n = segs.len();
            let segments: Vec<SegEntry> = segs
                .into_iter()
                .enumerate()
                .map(|(k, (len, bytes, time))| {
                    let e = SegEntry {
                        base,
                        path: PathBuf::from(format!("/log/{base}")),
                        last: (k + 1 < n).then_some(base + len - 1),
                        bytes,
                        last_time_ns: time,
                        time_read: false,
                    };
                    base += len;
                    e
                })
                .collect();
            Case {
                cursors,
                segments,
                limits,
                now,
                last: base.saturating_sub(1),
                opening,
                reserve,
            }
        },
    )
}

fn run(case: &Case) -> (Plan, Vec<String>) {
    let names: Vec<String> = (0..case.cursors.len()).map(|k| format!("c{k}")).collect();
    let cursors: Vec<Cursor<'_>> = case
        .cursors
        .iter()
        .zip(&names)
        .map(
            |(&(cleared, last_active_ns, waiting_since, unresolved), name)| Cursor {
                name,
                cleared: cleared.min(case.last),
                last_active_ns,
                waiting_since,
                unresolved,
            },
        )
        .collect();
    let p = plan(&Inputs {
        cursors: &cursors,
        segments: &case.segments,
        limits: &case.limits,
        now: case.now,
        last: case.last,
        opening: case.opening,
        reserve: case.reserve,
    });
    (p, names)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// What the plan removes is a prefix of the sealed segments, never the
    /// newest, and what it says is left adds up.
    #[test]
    fn removals_are_a_prefix_of_the_sealed_segments(case in arb_case()) {
        let (p, _) = run(&case);
        let segs = &case.segments;
        prop_assert!(p.remove.len() < segs.len().max(1));
        for (r, s) in p.remove.iter().zip(segs) {
            prop_assert_eq!(Some(r.last), s.last);
            prop_assert_eq!(r.base, s.base);
        }
        let kept: u64 = segs[p.remove.len()..].iter().map(|s| s.bytes).sum();
        prop_assert_eq!(p.total, kept + case.opening + case.reserve);
    }

    /// No consumer that stays loses a record to a removal the policy did
    /// not drop; the drop policy evicts for idleness only, and announces
    /// each segment it drops.
    #[test]
    fn survivors_keep_every_segment_they_need_unless_dropped(case in arb_case()) {
        let (p, names) = run(&case);
        let evicted: Vec<&str> = p.evict.iter().map(|(n, _)| n.as_str()).collect();
        for (k, name) in names.iter().enumerate() {
            if evicted.contains(&name.as_str()) {
                continue;
            }
            let cleared = case.cursors[k].0.min(case.last);
            for r in p.remove.iter().filter(|r| !r.dropped) {
                prop_assert!(cleared >= r.last, "{} cleared {} lost {:?}", name, cleared, r);
            }
        }
        let dropped: Vec<u64> = p.remove.iter().filter(|r| r.dropped).map(|r| r.last).collect();
        prop_assert_eq!(p.drops.iter().map(|d| d.1).collect::<Vec<_>>(), dropped);
        match case.limits.on_full {
            FullPolicy::DropOldest => {
                prop_assert!(p.evict.iter().all(|(_, r)| *r != Reason::SizeLimit));
            }
            _ => prop_assert!(p.drops.is_empty()),
        }
        let mut once = evicted.clone();
        once.sort_unstable();
        once.dedup();
        prop_assert_eq!(once.len(), evicted.len(), "evicted twice");
    }

    /// Each idle eviction keeps its limit: too far behind, or idle for
    /// longer than the limit while a record known to wait for it did too.
    #[test]
    fn idle_evictions_keep_their_limits(case in arb_case()) {
        let (p, names) = run(&case);
        for (name, reason) in &p.evict {
            let k = names.iter().position(|n| n == name).unwrap();
            let (cleared, active, waiting, unresolved) = case.cursors[k];
            let cleared = cleared.min(case.last);
            match reason {
                Reason::IdleRecords => {
                    prop_assert!(!unresolved);
                    prop_assert!(case.last - cleared > case.limits.max_idle_records.unwrap());
                }
                Reason::IdleTime => {
                    let t = nanos(case.limits.max_idle_time.unwrap());
                    prop_assert!(!unresolved && cleared < case.last);
                    prop_assert!(case.now.saturating_sub(active) > t);
                    prop_assert!(case.now.saturating_sub(waiting.unwrap()) > t);
                }
                Reason::SizeLimit => prop_assert!(case.limits.max_bytes != u64::MAX),
            }
        }
    }

    /// The plan stops short of the limit only where it may not go on: an
    /// unsealed segment, or the newest.
    #[test]
    fn over_the_limit_only_when_nothing_more_may_go(case in arb_case()) {
        let (p, _) = run(&case);
        if p.total - case.reserve > case.limits.max_bytes {
            let sealed_prefix = case.segments[..case.segments.len().saturating_sub(1)]
                .iter()
                .take_while(|s| s.last.is_some())
                .count();
            prop_assert_eq!(p.remove.len(), sealed_prefix);
        }
    }

    /// Without a floor (0 bytes or 0 s), Lustre's clear-then-purge: every
    /// sealed segment but the newest that all consumers left have cleared
    /// goes. (With none left, the log is kept for the limits to trim.)
    #[test]
    fn without_a_floor_what_every_consumer_cleared_goes(mut case in arb_case(), off in 0..2) {
        if off == 0 {
            case.limits.keep_bytes = 0;
        } else {
            case.limits.keep_age = Duration::ZERO;
        }
        let (p, names) = run(&case);
        let evicted = |k: usize| p.evict.iter().any(|(n, _)| *n == names[k]);
        let left = case.cursors.iter().enumerate().filter(|&(k, _)| !evicted(k));
        let Some(min) = left.map(|(_, c)| c.0.min(case.last)).min() else {
            return Ok(());
        };
        let cleared = case.segments[..case.segments.len().saturating_sub(1)]
            .iter()
            .take_while(|s| s.last.is_some_and(|l| l <= min))
            .count();
        prop_assert!(p.remove.len() >= cleared, "{:?} of {cleared}", p.remove);
    }

    /// No segment inside the floor is removed unless a limit removes it:
    /// the log over its size limit as the segment goes, or the segment
    /// older than the age limit with no consumer left.
    #[test]
    fn the_floor_gives_way_to_the_limits_only(case in arb_case()) {
        let (p, names) = run(&case);
        let segs = &case.segments;
        let nobody = p.evict.len() == names.len();
        for (k, r) in p.remove.iter().enumerate() {
            let newer: u64 = segs[k + 1..].iter().map(|s| s.bytes).sum();
            let before = newer + segs[k].bytes + case.opening + case.reserve;
            let t = segs[k].last_time_ns;
            let over = before > case.limits.max_bytes;
            let aged = nobody
                && t != 0
                && case
                    .limits
                    .max_age
                    .is_some_and(|a| case.now.saturating_sub(t) > nanos(a));
            prop_assert!(
                !in_floor(&case.limits, newer, t, case.now) || over || aged,
                "removed {:?} inside the floor, {} bytes before it went",
                r,
                before
            );
        }
    }

    /// The floor changes only how far the removals go: the same evictions
    /// and drops as without it, the removals a prefix of those, and where
    /// they stop short, they stop at a segment the floor keeps while the
    /// log is within its size limit.
    #[test]
    fn the_floor_only_shortens_the_removals(case in arb_case()) {
        let (with, _) = run(&case);
        let mut off = case.clone();
        off.limits.keep_bytes = 0;
        let (without, _) = run(&off);
        prop_assert_eq!(&with.evict, &without.evict);
        prop_assert_eq!(&with.drops, &without.drops);
        prop_assert!(with.remove.len() <= without.remove.len());
        prop_assert_eq!(&with.remove[..], &without.remove[..with.remove.len()]);
        if with.remove.len() < without.remove.len() {
            let k = with.remove.len();
            let segs = &case.segments;
            let newer: u64 = segs[k + 1..].iter().map(|s| s.bytes).sum();
            prop_assert!(in_floor(&case.limits, newer, segs[k].last_time_ns, case.now));
            prop_assert!(with.total <= case.limits.max_bytes);
        }
    }
}
