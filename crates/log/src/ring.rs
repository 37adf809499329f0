//! The append ring: where writers reserve their place and copy their record.
//!
//! A writer claims the next index with one compare-and-swap, which also
//! checks that the ring has a free slot, so an index is handed out only when
//! its record can be stored at once and the index sequence never has a hole.
//! The writer then copies its encoded frame into the slot and publishes it;
//! the single committer takes published slots in index order.
//!
//! Frames up to [`INLINE`] bytes (the common case) are stored as atomic
//! words, so neither the writer nor the committer takes a lock; larger frames
//! go through the slot's own mutex. Slots are cache-line aligned, so writers
//! filling neighbouring slots do not contend for a line.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// Frames up to this many bytes are stored inline.
pub(crate) const INLINE: usize = 120;
const WORDS: usize = INLINE / 8;

#[repr(align(64))]
struct Slot {
    /// The index whose record the slot holds, once published.
    ready: AtomicU64,
    /// The frame's length; above [`INLINE`] the frame is in `big`.
    len: AtomicU32,
    words: [AtomicU64; WORDS],
    big: Mutex<Vec<u8>>,
}

thread_local! {
    /// The index this thread expects to reserve next (see `try_reserve`).
    static NEXT_GUESS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Large-frame buffers above this are freed after use so that one large
/// record does not pin memory.
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
                    len: AtomicU32::new(0),
                    words: std::array::from_fn(|_| AtomicU64::new(0)),
                    big: Mutex::new(Vec::new()),
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
    ///
    /// The successful CAS is `SeqCst`: together with the `SeqCst` accesses
    /// to the committer's idle flag it forms a Dekker pair, so either the
    /// committer sees this record before it parks or the writer sees that
    /// it must wake it.
    #[inline]
    pub(crate) fn try_reserve(&self) -> Option<u64> {
        // Start from this thread's guess rather than a load: under
        // contention a plain load fetches the line shared and the CAS then
        // fetches it again exclusive. A wrong guess costs one failed CAS,
        // which returns the current value with the line already exclusive.
        let mut cur = NEXT_GUESS.get();
        loop {
            // `cur` may be stale and below `taken`; the CAS then fails and
            // reloads it. A guess from another ring may also be far ahead:
            // only the real value can say the ring is full.
            if cur.saturating_sub(self.taken.load(Ordering::Acquire)) > self.mask {
                let real = self.next.load(Ordering::Relaxed);
                if real != cur {
                    cur = real;
                    continue;
                }
                return None;
            }
            match self
                .next
                .compare_exchange_weak(cur, cur + 1, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => {
                    NEXT_GUESS.set(cur + 1);
                    return Some(cur);
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Stores the frame of `index` (which the caller reserved) and publishes it.
    #[inline]
    pub(crate) fn publish(&self, index: u64, frame: &[u8]) {
        let slot = &self.slots[(index & self.mask) as usize];
        if frame.len() <= INLINE {
            let mut words = frame.chunks(8);
            for (w, chunk) in slot.words.iter().zip(&mut words) {
                let mut b = [0u8; 8];
                b[..chunk.len()].copy_from_slice(chunk);
                w.store(u64::from_le_bytes(b), Ordering::Relaxed);
            }
        } else {
            let mut big = slot.big.lock().unwrap_or_else(|p| p.into_inner());
            big.clear();
            big.extend_from_slice(frame);
        }
        slot.len.store(frame.len() as u32, Ordering::Relaxed);
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
        let len = slot.len.load(Ordering::Relaxed) as usize;
        if len <= INLINE {
            let mut buf = [0u8; INLINE];
            for (w, out) in slot
                .words
                .iter()
                .zip(buf[..len.div_ceil(8) * 8].chunks_exact_mut(8))
            {
                out.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            return Some(f(&buf[..len]));
        }
        let mut big = slot.big.lock().unwrap_or_else(|p| p.into_inner());
        let r = f(&big);
        // Shrink only a frame that was consumed: one left in place is taken
        // again after a segment roll.
        if r.is_some() && big.capacity() > SHRINK_ABOVE {
            *big = Vec::new();
        }
        Some(r)
    }

    /// Frees the slots of every index below `upto`.
    pub(crate) fn release(&self, upto: u64) {
        self.taken.store(upto, Ordering::Release);
    }

    /// The next index to be handed out (`SeqCst`: see [`Ring::try_reserve`]).
    pub(crate) fn next(&self) -> u64 {
        self.next.load(Ordering::SeqCst)
    }

    /// Every index below this has been taken by the committer.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|k| seed.wrapping_add(k as u8)).collect()
    }

    #[test]
    fn reserve_publish_take_in_order() {
        let r = Ring::new(4, 1);
        let ids: Vec<u64> = (0..4).map(|_| r.try_reserve().unwrap()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        assert_eq!(r.try_reserve(), None, "full ring must refuse");
        r.publish(2, b"two");
        assert_eq!(
            r.take(1, |b| Some(b.to_vec())),
            None,
            "1 is not published yet"
        );
        r.publish(1, b"one");
        assert_eq!(r.take(1, |b| Some(b.to_vec())).flatten().unwrap(), b"one");
        assert_eq!(r.take(2, |b| Some(b.to_vec())).flatten().unwrap(), b"two");
        r.release(3);
        assert_eq!(r.try_reserve(), Some(5));
        assert_eq!(r.try_reserve(), Some(6));
        assert_eq!(r.try_reserve(), None);
    }

    #[test]
    fn a_guess_from_another_ring_does_not_look_full() {
        // Regression: the per-thread guess is shared by every ring in the
        // process; after appending to a ring far ahead, reserving in a new
        // ring saw "full" forever and appends stalled until their timeout.
        let far = Ring::new(4, 1_000_000);
        assert_eq!(far.try_reserve(), Some(1_000_000));
        let near = Ring::new(4, 1);
        assert_eq!(near.try_reserve(), Some(1));
        assert_eq!(far.try_reserve(), Some(1_000_001));
        assert_eq!(near.try_reserve(), Some(2));
    }

    #[test]
    fn inline_and_large_frames_round_trip_and_stay_until_taken() {
        let r = Ring::new(2, 1);
        for (k, n) in [0, 1, 7, 8, 9, INLINE - 1, INLINE, INLINE + 1, 100_000]
            .into_iter()
            .enumerate()
        {
            let idx = r.try_reserve().unwrap();
            let want = frame(n, k as u8);
            r.publish(idx, &want);
            // Left in place (did not fit), then taken again.
            assert_eq!(r.take(idx, |_| None::<()>), Some(None));
            assert_eq!(r.take(idx, |b| Some(b.to_vec())).flatten().unwrap(), want);
            r.release(idx + 1);
        }
    }
}
