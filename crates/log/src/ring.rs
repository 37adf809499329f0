//! The append ring: where writers reserve their place and copy their record.
//!
//! A writer claims the next index with one compare-and-swap, which also
//! checks that the ring has a free slot, so an index is handed out only when
//! its record can be stored at once and the index sequence never has a hole.
//! The writer then encodes its record straight into the slot and publishes
//! it. Each slot has its own lock, touched only by its writer and later by the
//! committer, so writers never wait for each other beyond the CAS. The single
//! committer takes published slots in index order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

struct Slot {
    /// The index whose record the slot holds, once published.
    ready: AtomicU64,
    frame: Mutex<Vec<u8>>,
}

/// Slots larger than this are shrunk after use so that one large record does
/// not pin memory.
const SHRINK_ABOVE: usize = 64 * 1024;

/// A bounded ring of record slots indexed by record index.
pub(crate) struct Ring {
    slots: Box<[Slot]>,
    mask: u64,
    /// The next index to hand out.
    next: CachePadded<AtomicU64>,
    /// Every index below this has been copied out by the committer.
    taken: CachePadded<AtomicU64>,
}

impl Ring {
    /// A ring of `slots` slots (a power of two) whose first index is `first`.
    pub(crate) fn new(slots: usize, first: u64) -> Ring {
        debug_assert!(slots.is_power_of_two());
        Ring {
            slots: (0..slots)
                .map(|_| Slot {
                    ready: AtomicU64::new(0),
                    frame: Mutex::new(Vec::new()),
                })
                .collect(),
            mask: slots as u64 - 1,
            next: CachePadded::new(AtomicU64::new(first)),
            taken: CachePadded::new(AtomicU64::new(first)),
        }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Claims the next index if a slot is free.
    #[inline]
    pub(crate) fn try_reserve(&self) -> Option<u64> {
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            // `cur` may be stale and below `taken`; the CAS then fails and
            // reloads it.
            if cur.saturating_sub(self.taken.load(Ordering::Acquire)) > self.mask {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Some(cur),
                Err(seen) => cur = seen,
            }
        }
    }

    /// Stores the frame of `index` (which the caller reserved) and publishes it.
    #[inline]
    pub(crate) fn publish(&self, index: u64, fill: impl FnOnce(&mut Vec<u8>)) {
        let slot = &self.slots[(index & self.mask) as usize];
        {
            let mut frame = slot.frame.lock().unwrap_or_else(|p| p.into_inner());
            frame.clear();
            fill(&mut frame);
        }
        slot.ready.store(index, Ordering::Release);
    }

    /// Hands the frame of `index` to `f` if it is published. Only the
    /// committer calls this, in index order. `f` returns `None` to leave the
    /// frame in its slot (it did not fit), to be taken again later.
    #[inline]
    pub(crate) fn take<R>(
        &self,
        index: u64,
        f: impl FnOnce(&[u8]) -> Option<R>,
    ) -> Option<Option<R>> {
        let slot = &self.slots[(index & self.mask) as usize];
        if slot.ready.load(Ordering::Acquire) != index {
            return None;
        }
        let mut frame = slot.frame.lock().unwrap_or_else(|p| p.into_inner());
        let r = f(&frame);
        // Shrink only a frame that was consumed: one left in place is taken
        // again after a segment roll.
        if r.is_some() && frame.capacity() > SHRINK_ABOVE {
            *frame = Vec::new();
        }
        Some(r)
    }

    /// Frees the slots of every index below `upto`.
    pub(crate) fn release(&self, upto: u64) {
        self.taken.store(upto, Ordering::Release);
    }

    /// The next index to be handed out.
    pub(crate) fn next(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Every index below this has been taken by the committer.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_publish_take_in_order() {
        let r = Ring::new(4, 1);
        let ids: Vec<u64> = (0..4).map(|_| r.try_reserve().unwrap()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        assert_eq!(r.try_reserve(), None, "full ring must refuse");
        r.publish(2, |v| v.extend_from_slice(b"two"));
        assert_eq!(
            r.take(1, |b| Some(b.to_vec())),
            None,
            "1 is not published yet"
        );
        r.publish(1, |v| v.extend_from_slice(b"one"));
        assert_eq!(r.take(1, |b| Some(b.to_vec())).flatten().unwrap(), b"one");
        assert_eq!(r.take(2, |b| Some(b.to_vec())).flatten().unwrap(), b"two");
        r.release(3);
        assert_eq!(r.try_reserve(), Some(5));
        assert_eq!(r.try_reserve(), Some(6));
        assert_eq!(r.try_reserve(), None);
    }
}
