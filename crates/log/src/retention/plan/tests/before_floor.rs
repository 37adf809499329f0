//! The plan as it was before the floor, kept verbatim as the oracle of
//! the property that a log without a floor is retained exactly as before
//! (`a_log_without_a_floor_is_planned_as_before`). A change of how a log
//! without a floor is retained is made here too, on purpose; the floor's
//! changes are not.

use crate::announce::Reason;
use crate::options::FullPolicy;
use crate::retention::plan::{Inputs, Plan, Removal, nanos};

/// Plans one retention pass, without a floor.
pub(super) fn plan(i: &Inputs<'_>) -> Plan {
    let ret = i.limits;
    let mut out = Plan::default();
    let mut alive = vec![true; i.cursors.len()];

    // Idle consumers. A consumer is idle only while records wait for it:
    // one that had read everything on a quiet log is not evicted by the
    // first record after the quiet spell.
    let idle_limit = ret.max_idle_time.map(nanos);
    for (k, c) in i.cursors.iter().enumerate() {
        if c.cleared >= i.last || c.unresolved {
            continue;
        }
        let lag = i.last - c.cleared;
        let reason = if ret.max_idle_records.is_some_and(|m| lag > m) {
            Some(Reason::IdleRecords)
        } else if idle_limit.is_some_and(|t| {
            i.now.saturating_sub(c.last_active_ns) > t
                && c.waiting_since.is_some_and(|w| i.now.saturating_sub(w) > t)
        }) {
            Some(Reason::IdleTime)
        } else {
            None
        };
        if let Some(reason) = reason {
            alive[k] = false;
            out.evict.push((c.name.to_owned(), reason));
        }
    }

    let min_cleared = |alive: &[bool]| {
        i.cursors
            .iter()
            .zip(alive)
            .filter(|(_, a)| **a)
            .map(|(c, _)| c.cleared)
            .min()
    };
    let segs = i.segments;
    let mut total: u64 = segs.iter().map(|s| s.bytes).sum::<u64>() + i.opening + i.reserve;
    // Never the newest segment: its name tells recovery the next index.
    for s in segs.iter().take(segs.len().saturating_sub(1)) {
        let Some(seg_last) = s.last else { break };
        let min = min_cleared(&alive);
        let needed = min.is_some_and(|m| m < seg_last);
        let cleared = min.is_some_and(|m| m >= seg_last);
        let aged = min.is_none()
            && ret.max_age.is_some_and(|age| {
                let t = s.last_time_ns;
                t != 0 && i.now.saturating_sub(t) > nanos(age)
            });
        let over = total > ret.max_bytes;
        if cleared || aged || (over && !needed) {
            total -= s.bytes;
            out.remove.push(Removal {
                base: s.base,
                last: seg_last,
                dropped: false,
            });
            continue;
        }
        // Under the limit, or over it only by the spare's room.
        if total - i.reserve <= ret.max_bytes {
            break;
        }
        // Over the limit and a consumer needs this segment.
        match ret.on_full {
            FullPolicy::EvictMostIdle => {
                // The most idle of those that need it: oldest activity
                // first, then furthest behind.
                while let Some(k) = i
                    .cursors
                    .iter()
                    .enumerate()
                    .filter(|&(k, c)| alive[k] && c.cleared < seg_last)
                    .min_by_key(|(_, c)| (c.last_active_ns, c.cleared))
                    .map(|(k, _)| k)
                {
                    alive[k] = false;
                    out.evict
                        .push((i.cursors[k].name.to_owned(), Reason::SizeLimit));
                }
            }
            FullPolicy::DropOldest => out.drops.push((min.unwrap_or(0), seg_last)),
        }
        total -= s.bytes;
        out.remove.push(Removal {
            base: s.base,
            last: seg_last,
            dropped: matches!(ret.on_full, FullPolicy::DropOldest),
        });
    }
    out.total = total;
    out
}
