//! Retention's policy: which consumers to evict and which segments to
//! remove, worked out from the consumers, the segments, the limits, the
//! floor and the time alone. No I/O, no lock, no `Log`: `retention::run`
//! gathers what this needs (reading records where a consumer's wait is
//! not known) and applies the plan (evictions, the consumer state's save,
//! removals, MARKs); tests call [`plan`] directly.

use crate::announce::Reason;
use crate::catalog::SegEntry;
use crate::options::{FullPolicy, Retention};

/// A consumer as the plan sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    pub(crate) name: &'a str,
    pub(crate) cleared: u64,
    pub(crate) last_active_ns: u64,
    /// Since when a record has waited for it: the time of the record after
    /// its cleared index, 0 (ever) if that cannot be read. `None` if not
    /// known this pass: it is then not judged idle by time.
    pub(crate) waiting_since: Option<u64>,
    /// Whether a record it reads may still lie ahead, past records its
    /// mask excludes that no look has passed yet: it is then not judged
    /// idle at all (see `pass_unwanted`).
    pub(crate) unresolved: bool,
}

/// What a pass plans from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inputs<'a> {
    /// The consumers, in the set's order (ties between equally idle
    /// consumers go to the first).
    pub(crate) cursors: &'a [Cursor<'a>],
    /// The segments, oldest first, each sealed one with the time of its
    /// newest record where the age limit or the floor needs it (0 where
    /// it is not known).
    pub(crate) segments: &'a [SegEntry],
    pub(crate) limits: &'a Retention,
    pub(crate) now: u64,
    /// The last committed index.
    pub(crate) last: u64,
    /// The size of a segment about to be opened (after a roll, for the
    /// records waiting in the ring), which counts as made.
    pub(crate) opening: u64,
    /// The room the spare segment takes or would take: it counts towards
    /// the size limit like a segment, so segments nobody needs are
    /// removed to make it, but no consumer is evicted, and no segment it
    /// needs dropped, for it.
    pub(crate) reserve: u64,
}

/// What a pass does, in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Consumers to evict, in the order their MARKs go out: those idle
    /// first, then those the size limit evicts.
    pub(crate) evict: Vec<(String, Reason)>,
    /// Segments dropped though a consumer needed them, as `(cleared,
    /// through)`: the lowest cleared index left then, and the segment's
    /// last index. A pass evicts for the size limit or drops, never both,
    /// so these MARKs follow every eviction's.
    pub(crate) drops: Vec<(u64, u64)>,
    /// Segments to remove, oldest first: a prefix of the sealed segments,
    /// never the newest.
    pub(crate) remove: Vec<Removal>,
    /// The size once they are gone, with the opening segment and the
    /// spare's room.
    pub(crate) total: u64,
}

/// A segment to remove.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Removal {
    pub(crate) base: u64,
    pub(crate) last: u64,
    /// Dropped by the size limit's policy though a consumer needs it: it
    /// goes whether or not the consumer state is saved. Any other goes
    /// only once the state on disk lets it.
    pub(crate) dropped: bool,
}

/// A limit in ns, saturating: a limit of centuries must not wrap to a
/// short one.
pub(crate) fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whether a segment holds history inside the floor: some of the newest
/// `keep_bytes` of the log (`newer` bytes of segments are newer than it),
/// and a newest record (at `last_time_ns`) younger than `keep_age`. A
/// time not known (0) is judged by size alone: keeping such a segment
/// costs at most the floor's size, deleting it would lose history that
/// may be recent.
pub(crate) fn in_floor(ret: &Retention, newer: u64, last_time_ns: u64, now: u64) -> bool {
    ret.has_floor()
        && newer < ret.keep_bytes
        && (last_time_ns == 0 || now.saturating_sub(last_time_ns) < nanos(ret.keep_age))
}

/// Plans one retention pass.
pub(crate) fn plan(i: &Inputs<'_>) -> Plan {
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
    // The bytes of the segments newer than the one looked at.
    let mut newer: u64 = segs.iter().map(|s| s.bytes).sum();
    // Never the newest segment: its name tells recovery the next index.
    for s in segs.iter().take(segs.len().saturating_sub(1)) {
        let Some(seg_last) = s.last else { break };
        newer -= s.bytes;
        let min = min_cleared(&alive);
        let needed = min.is_some_and(|m| m < seg_last);
        let cleared = min.is_some_and(|m| m >= seg_last);
        let aged = min.is_none()
            && ret.max_age.is_some_and(|age| {
                let t = s.last_time_ns;
                t != 0 && i.now.saturating_sub(t) > nanos(age)
            });
        let over = total > ret.max_bytes;
        // The floor holds back clears only: over the size limit or aged
        // out, a segment goes though it is inside. And since removals are
        // a prefix, a segment it keeps keeps every newer one too.
        let kept = in_floor(ret, newer, s.last_time_ns, i.now);
        if (cleared && !kept) || aged || (over && !needed) {
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

#[cfg(test)]
mod tests;
