//! The append ring: where writers reserve their place and copy their record.
//!
//! A writer claims the next index with one compare-and-swap, which also
//! checks that the ring has a free slot, so an index is handed out only when
//! its record can be stored at once and the index sequence never has a hole.
//! The writer then copies its encoded frame into the slot and publishes it;
//! the single committer takes published slots in index order.
//!
//! A writer preempted between its reservation and its publish leaves a hole
//! the committer cannot pass in order. So that one such writer cannot fill
//! the ring and stall every other, the committer may *lift* published frames
//! beyond the hole out of their slots (see [`Ring::lift`]); a lifted slot is
//! free for its next lap at once, without waiting for the hole. The hole's
//! own slot stays taken, so the writer of the index a lap after it, and of
//! each lap after that, *spills* its frame into a bounded side map under a
//! mutex instead of waiting: the slow path of a stall, never the hot path.
//!
//! Frames up to [`INLINE`] bytes (the common case) are stored as atomic
//! words, so neither the writer nor the committer takes a lock; larger frames
//! go through a mutex of their own beside the slot. A slot has no header of
//! its own: the frame's index field is its publish flag. Slots are two
//! cache lines, aligned, so writers filling neighbouring slots do not
//! contend for a line, and a frame of up to 64 bytes moves one line from
//! its writer's core to the committer's (and back, on the next lap).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// Frames up to this many bytes are stored inline: two cache lines.
pub(crate) const INLINE: usize = 128;
const WORDS: usize = INLINE / 8;

/// The word of a frame that holds its index (bytes 8..16 in format v1),
/// which is also the slot's publish flag. Word 0 holds the frame's length
/// (and its CRC field, still zero: the committer seals frames).
const READY: usize = 1;

const _: () = assert!(READY * 8 == crate::codec::INDEX_AT.start);

/// One record's place in the ring: the frame itself, as 128 bytes of words.
///
/// A writer stores every word of its frame but [`READY`], then that one
/// with `Release`; the committer loads [`READY`] with `Acquire` and finds
/// the index it expects only once the whole frame is there. So a frame of
/// up to 64 bytes touches one cache line, and every line is a transfer
/// between cores (the writer's, then the committer's). A separate header
/// (the index and the length, 16 bytes) put a 64-byte frame on two lines.
#[repr(C, align(64))]
struct Slot {
    /// Word [`READY`] holds the index whose record the slot holds, once
    /// published, or that index with [`LIFTED`] once lifted. Word 0's low
    /// half is the frame's length; above [`INLINE`] the frame itself is in
    /// `Ring::big`, and the slot holds only its first two words.
    words: [AtomicU64; WORDS],
}

const _: () = assert!(std::mem::size_of::<Slot>() == 128);

thread_local! {
    /// The index this thread expects to reserve next (see `try_reserve`),
    /// and whether its last guess held: no other writer had reserved
    /// between this thread's last two reservations.
    static NEXT_GUESS: std::cell::Cell<(u64, bool)> = const { std::cell::Cell::new((0, false)) };
}

/// Marks a slot whose frame the committer lifted out of order: the slot
/// holds `index | LIFTED` and is free for `index + capacity`. Indexes never
/// reach bit 63.
const LIFTED: u64 = 1 << 63;

/// Bytes the spill map may hold per ring slot.
const SPILL_BYTES_PER_SLOT: u64 = 256;

/// Large-frame buffers above this are freed after use so that one large
/// record does not pin memory.
const SHRINK_ABOVE: usize = 64 * 1024;

/// A reserved index and where its frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reservation {
    pub(crate) index: u64,
    /// The slot was still taken: the frame goes to the spill map.
    pub(crate) spill: bool,
}

/// A bounded ring of record slots indexed by record index.
pub(crate) struct Ring {
    slots: Box<[Slot]>,
    /// The frames of slots whose frame is above [`INLINE`], one per slot.
    /// Apart from the slots, so that they do not widen them.
    big: Box<[Mutex<Vec<u8>>]>,
    mask: u64,
    /// Frames whose slot was still held by a hole when they were reserved.
    spill: Mutex<BTreeMap<u64, Vec<u8>>>,
    /// Indexes reserved for the spill map and not yet taken from it: lets
    /// the committer skip the lock when zero.
    spilled: CachePadded<AtomicU64>,
    /// Their frames' bytes, which bound the map (loosely: writers racing
    /// past the check may overshoot by a frame each).
    spilled_bytes: AtomicU64,
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
                    words: std::array::from_fn(|_| AtomicU64::new(0)),
                })
                .collect(),
            big: (0..slots).map(|_| Mutex::new(Vec::new())).collect(),
            mask: slots as u64 - 1,
            spill: Mutex::new(BTreeMap::new()),
            spilled: CachePadded::new(AtomicU64::new(0)),
            spilled_bytes: AtomicU64::new(0),
            next: CachePadded::new(AtomicU64::new(first)),
            taken: CachePadded::new(AtomicU64::new(first)),
        }
    }

    /// Starts fetching the index counter's line for writing, so that a
    /// reservation a little later does not wait for all of it.
    ///
    /// A thread whose last guess held (it appends alone, or nearly) will
    /// most likely get the index after its last one: it starts fetching
    /// that slot for writing too. The slot was last written a lap ago, so
    /// its lines are far from this core, and in `perf` the first store to
    /// them was the largest stall of a lone writer's append. A thread that
    /// contends does not: the slot after its own is then usually another
    /// writer's, which the prefetch would take away from it.
    #[inline]
    pub(crate) fn prefetch_reserve(&self) {
        weir_sys::cache::prefetchw(&*self.next);
        let (guess, held) = NEXT_GUESS.get();
        if held {
            let slot = &self.slots[(guess & self.mask) as usize];
            weir_sys::cache::prefetchw(&slot.words[0]);
            weir_sys::cache::prefetchw(&slot.words[WORDS / 2]);
        }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Claims the next index for a frame of `len` bytes if its slot is free,
    /// or else if the spill map has room.
    ///
    /// The successful CAS is `SeqCst`: together with the `SeqCst` accesses
    /// to the committer's idle flag it forms a Dekker pair, so either the
    /// committer sees this record before it parks or the writer sees that
    /// it must wake it.
    #[inline]
    pub(crate) fn try_reserve(&self, len: usize) -> Option<Reservation> {
        // Start from this thread's guess rather than a load: under
        // contention a plain load fetches the line shared and the CAS then
        // fetches it again exclusive. A wrong guess costs one failed CAS,
        // which returns the current value with the line already exclusive.
        let (guess, _) = NEXT_GUESS.get();
        let mut cur = guess;
        loop {
            // `cur` may be stale and below `taken`; the CAS then fails and
            // reloads it. A guess from another ring may also be far ahead:
            // only the real value can say the ring is full.
            let mut spill = false;
            if !self.free_for(cur) {
                let real = self.next.load(Ordering::Relaxed);
                if real != cur {
                    cur = real;
                    continue;
                }
                if !self.held_by_hole(cur) || !self.spill_has_room(len) {
                    return None;
                }
                spill = true;
            }
            match self
                .next
                .compare_exchange_weak(cur, cur + 1, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => {
                    if cur != guess {
                        // Another writer reserved since this one last did,
                        // so the line moves between cores: leave it in the
                        // shared cache, where the next writer's CAS finds
                        // it without a snoop of this core (see
                        // `weir_sys::cache`). A lone writer keeps it.
                        weir_sys::cache::cldemote(&*self.next);
                    }
                    NEXT_GUESS.set((cur + 1, cur == guess));
                    if spill {
                        self.spilled_bytes.fetch_add(len as u64, Ordering::AcqRel);
                        self.spilled.fetch_add(1, Ordering::AcqRel);
                    }
                    return Some(Reservation { index: cur, spill });
                }
                Err(seen) => cur = seen,
            }
        }
    }

    /// Whether the slot of `index` is free: the committer has taken every
    /// index a lap before it in order, or lifted the one that used the slot.
    /// Once true for an index it stays true until that index is published,
    /// so the check may precede the reservation.
    #[inline]
    fn free_for(&self, index: u64) -> bool {
        if index.saturating_sub(self.taken.load(Ordering::Acquire)) <= self.mask {
            return true;
        }
        index.checked_sub(self.capacity()).is_some_and(|prev| {
            self.slots[(index & self.mask) as usize].words[READY].load(Ordering::Acquire)
                == prev | LIFTED
        })
    }

    /// Whether the slot of `index` (not free) is held by a reservation a lap
    /// earlier that is not yet published. A slot that holds a published
    /// frame only waits for the committer, and spilling would not speed
    /// that up: the writer waits too.
    #[inline]
    fn held_by_hole(&self, index: u64) -> bool {
        index.checked_sub(self.capacity()).is_some_and(|prev| {
            self.slots[(index & self.mask) as usize].words[READY].load(Ordering::Acquire) != prev
        })
    }

    /// Whether a frame of `len` bytes fits in the spill map, which holds
    /// [`SPILL_BYTES_PER_SLOT`] bytes per ring slot: two laps of typical
    /// records.
    fn spill_has_room(&self, len: usize) -> bool {
        self.spilled_bytes.load(Ordering::Acquire) + len as u64
            <= SPILL_BYTES_PER_SLOT * self.capacity()
    }

    /// Whether the next index could be reserved now for a frame of `len`,
    /// by the same rules as [`Ring::try_reserve`].
    pub(crate) fn has_room(&self, len: usize) -> bool {
        let next = self.next.load(Ordering::Acquire);
        self.free_for(next) || (self.held_by_hole(next) && self.spill_has_room(len))
    }

    /// Frames in the spill map or on their way to it.
    pub(crate) fn spilled(&self) -> u64 {
        self.spilled.load(Ordering::Acquire)
    }

    /// Stores the frame of a reservation and publishes it.
    #[inline]
    pub(crate) fn publish(&self, r: Reservation, frame: &[u8]) {
        let index = r.index;
        if r.spill {
            let mut spill = self.spill.lock().unwrap_or_else(|p| p.into_inner());
            spill.insert(index, frame.to_vec());
            return;
        }
        if frame.len() <= INLINE {
            let mut buf = [0u8; INLINE];
            buf[..frame.len()].copy_from_slice(frame);
            self.publish_inline(index, &buf, frame.len());
            return;
        }
        let at = (index & self.mask) as usize;
        let slot = &self.slots[at];
        let mut big = self.big[at].lock().unwrap_or_else(|p| p.into_inner());
        big.clear();
        big.extend_from_slice(frame);
        drop(big);
        slot.words[0].store(frame.len() as u64, Ordering::Relaxed);
        slot.words[READY].store(index, Ordering::Release);
    }

    /// Stores the first `len` bytes (at most [`INLINE`]) of `buf`, the
    /// frame of `index`, reserved in its slot (not spilled), and publishes
    /// it. The append path encodes small frames straight into `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` does not hold a frame with index `index`: its index field
    /// is what publishes it.
    #[inline]
    pub(crate) fn publish_inline(&self, index: u64, buf: &[u8; INLINE], len: usize) {
        let slot = &self.slots[(index & self.mask) as usize];
        let word =
            |k: usize| u64::from_le_bytes(buf[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        assert!(
            len > READY * 8 && word(0) as u32 as usize == len && word(READY) == index,
            "not a frame of {len} bytes with index {index}"
        );
        slot.words[0].store(word(0), Ordering::Relaxed);
        for (k, w) in slot.words[..len.div_ceil(8)]
            .iter()
            .enumerate()
            .skip(READY + 1)
        {
            w.store(word(k), Ordering::Relaxed);
        }
        slot.words[READY].store(index, Ordering::Release);
    }

    /// Hands the frame of `index` to `f` if it is published. Only the
    /// committer calls this, in index order. `f` returns `None` to leave the
    /// frame where it is (it did not fit), to be taken again later.
    #[inline]
    pub(crate) fn take<R>(
        &self,
        index: u64,
        f: impl FnOnce(&[u8]) -> Option<R>,
    ) -> Option<Option<R>> {
        let at = (index & self.mask) as usize;
        let slot = &self.slots[at];
        if slot.words[READY].load(Ordering::Acquire) != index {
            return self.take_spilled(index, f);
        }
        let len = slot.words[0].load(Ordering::Relaxed) as u32 as usize;
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
        let mut big = self.big[at].lock().unwrap_or_else(|p| p.into_inner());
        let r = f(&big);
        // Shrink only a frame that was consumed: one left in place is taken
        // again after a segment roll.
        if r.is_some() && big.capacity() > SHRINK_ABOVE {
            *big = Vec::new();
        }
        Some(r)
    }

    #[cold]
    fn take_spilled<R>(&self, index: u64, f: impl FnOnce(&[u8]) -> Option<R>) -> Option<Option<R>> {
        if self.spilled.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut spill = self.spill.lock().unwrap_or_else(|p| p.into_inner());
        let r = f(spill.get(&index)?);
        if r.is_some()
            && let Some(frame) = spill.remove(&index)
        {
            self.spilled_bytes
                .fetch_sub(frame.len() as u64, Ordering::AcqRel);
            self.spilled.fetch_sub(1, Ordering::AcqRel);
        }
        Some(r)
    }

    /// Copies the frame of `index` out of its slot if it is published, and
    /// frees the slot at once. Only the committer calls this, for indexes
    /// above `taken` that it will not [`take`](Ring::take).
    pub(crate) fn lift(&self, index: u64) -> Option<Vec<u8>> {
        let slot = &self.slots[(index & self.mask) as usize];
        if slot.words[READY].load(Ordering::Acquire) != index {
            return None;
        }
        let frame = self.take(index, |f| Some(f.to_vec())).flatten();
        // Release: the next lap's writer must not overwrite the frame
        // before the copy above is complete.
        slot.words[READY].store(index | LIFTED, Ordering::Release);
        frame
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

    /// Whether the frame of `index` is published, in its slot or in the
    /// spill map.
    pub(crate) fn is_published(&self, index: u64) -> bool {
        let slot = &self.slots[(index & self.mask) as usize];
        slot.words[READY].load(Ordering::Acquire) == index
            || (self.spilled.load(Ordering::Acquire) > 0
                && self
                    .spill
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .contains_key(&index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of `n` bytes (at least 16) as the ring expects one: its
    /// length in bytes 0..4 and its index in bytes 8..16.
    fn frame(index: u64, n: usize) -> Vec<u8> {
        let mut f: Vec<u8> = (0..n)
            .map(|k| (index as u8).wrapping_add(k as u8))
            .collect();
        f[0..4].copy_from_slice(&(n as u32).to_le_bytes());
        f[8..16].copy_from_slice(&index.to_le_bytes());
        f
    }

    fn reserve(r: &Ring) -> Option<u64> {
        r.try_reserve(9).map(|res| {
            assert!(!res.spill, "a free slot was expected");
            res.index
        })
    }

    fn slot(index: u64) -> Reservation {
        Reservation {
            index,
            spill: false,
        }
    }

    fn taken(r: &Ring, index: u64) -> Vec<u8> {
        r.take(index, |b| Some(b.to_vec())).flatten().unwrap()
    }

    #[test]
    fn reserve_publish_take_in_order() {
        let r = Ring::new(4, 1);
        let ids: Vec<u64> = (0..4).map(|_| reserve(&r).unwrap()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        r.publish(slot(2), &frame(2, 22));
        assert_eq!(
            r.take(1, |b| Some(b.to_vec())),
            None,
            "1 is not published yet"
        );
        r.publish(slot(1), &frame(1, 21));
        assert_eq!(taken(&r, 1), frame(1, 21));
        assert_eq!(taken(&r, 2), frame(2, 22));
        r.release(3);
        assert_eq!(reserve(&r), Some(5));
        assert_eq!(reserve(&r), Some(6));
    }

    #[test]
    fn a_writer_counts_its_guess_as_held_only_when_nobody_reserved_in_between() {
        // `prefetch_reserve` fetches the slot after a writer's last only
        // when this says the writer appends alone; were it always true,
        // contending writers would pull each other's slots away.
        let held = || NEXT_GUESS.get().1;
        let r = Ring::new(8, 1);
        reserve(&r).unwrap();
        assert!(!held(), "a first reservation had nothing to guess from");
        reserve(&r).unwrap();
        assert!(held(), "nobody reserved between this thread's two");
        std::thread::scope(|s| s.spawn(|| reserve(&r).unwrap()).join().unwrap());
        assert_eq!(reserve(&r), Some(4));
        assert!(!held(), "another thread reserved 3 in between");
        reserve(&r).unwrap();
        assert!(held());
    }

    #[test]
    fn a_full_ring_spills_up_to_its_limit_then_refuses() {
        let r = Ring::new(2, 1);
        assert_eq!(reserve(&r), Some(1));
        assert_eq!(reserve(&r), Some(2));
        // Slots 1 and 2 are held: frames spill until their bytes reach the
        // bound, 256 per slot.
        for want in 3..=6 {
            let res = r.try_reserve(128).unwrap();
            assert_eq!((res.index, res.spill), (want, true));
            r.publish(res, &frame(want, 128));
        }
        assert_eq!(r.spilled(), 4);
        assert!(!r.has_room(1));
        // A slot that holds a published frame only waits for the committer:
        // no room, though the spill map would have some.
        let q = Ring::new(2, 1);
        q.publish(slot(reserve(&q).unwrap()), &frame(1, 21));
        reserve(&q).unwrap();
        assert!(!q.has_room(1), "the committer is behind; nothing spills");
        assert_eq!(q.try_reserve(1), None);
        assert_eq!(r.try_reserve(1), None, "the spill map is full");
        // Spilled frames are taken in order once the committer gets there,
        // and taking them makes room again.
        r.publish(slot(1), &frame(1, 21));
        r.publish(slot(2), &frame(2, 22));
        assert_eq!(taken(&r, 1), frame(1, 21));
        assert_eq!(taken(&r, 2), frame(2, 22));
        assert_eq!(taken(&r, 3), frame(3, 128));
        assert_eq!(r.spilled(), 3);
        assert!(r.has_room(128));
        assert!(!r.has_room(129));
    }

    #[test]
    fn a_spilled_frame_left_in_place_is_taken_again() {
        let r = Ring::new(2, 1);
        reserve(&r).unwrap();
        reserve(&r).unwrap();
        let res = r.try_reserve(9).unwrap();
        assert!(res.spill);
        assert_eq!(r.take(3, |b| Some(b.len())), None, "not published yet");
        r.publish(res, &frame(3, 23));
        assert_eq!(r.take(3, |_| None::<()>), Some(None));
        assert_eq!(r.spilled(), 1);
        assert_eq!(taken(&r, 3), frame(3, 23));
        assert_eq!(r.spilled(), 0);
    }

    #[test]
    fn a_lifted_slot_is_free_for_its_next_lap_only() {
        // Regression for the stall this guards: one writer preempted between
        // its reservation and its publish stopped every other writer once
        // the ring came round to it.
        let r = Ring::new(4, 1);
        let ids: Vec<u64> = (0..4).map(|_| reserve(&r).unwrap()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        // 1 is the hole; 2 and 3 are published; 4 is reserved only.
        r.publish(slot(2), &frame(2, 22));
        r.publish(slot(3), &frame(3, 23));
        assert_eq!(r.lift(1), None, "a hole cannot be lifted");
        assert_eq!(r.lift(4), None, "unpublished");
        assert_eq!(r.lift(2).unwrap(), frame(2, 22));
        assert_eq!(r.lift(3).unwrap(), frame(3, 23));
        assert_eq!(r.lift(2), None, "already lifted");
        // 5 maps to the hole's slot: it spills. 6 and 7 reuse the lifted
        // slots. 8 maps to 4's slot, still held: it spills.
        let five = r.try_reserve(9).unwrap();
        assert_eq!((five.index, five.spill), (5, true));
        assert_eq!(reserve(&r), Some(6));
        assert_eq!(reserve(&r), Some(7));
        let eight = r.try_reserve(9).unwrap();
        assert_eq!((eight.index, eight.spill), (8, true));
        r.publish(slot(6), &frame(6, 26));
        assert_eq!(r.lift(2), None, "the slot now holds 6");
        assert_eq!(taken(&r, 6), frame(6, 26));
    }

    #[test]
    fn a_guess_from_another_ring_does_not_look_full() {
        // Regression: the per-thread guess is shared by every ring in the
        // process; after appending to a ring far ahead, reserving in a new
        // ring saw "full" forever and appends stalled until their timeout.
        let far = Ring::new(4, 1_000_000);
        assert_eq!(reserve(&far), Some(1_000_000));
        let near = Ring::new(4, 1);
        assert_eq!(reserve(&near), Some(1));
        assert_eq!(reserve(&far), Some(1_000_001));
        assert_eq!(reserve(&near), Some(2));
    }

    #[test]
    fn inline_and_large_frames_round_trip_and_stay_until_taken() {
        let r = Ring::new(2, 1);
        for n in [16, 17, 63, 64, 65, INLINE - 1, INLINE, INLINE + 1, 100_000] {
            let idx = reserve(&r).unwrap();
            let want = frame(idx, n);
            r.publish(slot(idx), &want);
            // Left in place (did not fit), then taken again.
            assert_eq!(r.take(idx, |_| None::<()>), Some(None));
            assert_eq!(taken(&r, idx), want);
            r.release(idx + 1);
        }
    }

    #[test]
    fn a_frame_of_64_bytes_writes_one_cache_line() {
        // The slot has no header: a 64-byte frame, the usual create or
        // unlink record, must stay within the slot's first line, or it costs
        // a second transfer between cores per record.
        let r = Ring::new(1, 1);
        r.publish(slot(reserve(&r).unwrap()), &frame(1, INLINE));
        assert_eq!(taken(&r, 1), frame(1, INLINE));
        r.release(2);
        r.publish(slot(reserve(&r).unwrap()), &frame(2, 64));
        let words: Vec<u64> = r.slots[0]
            .words
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        let old = frame(1, INLINE);
        for (k, w) in words.iter().enumerate().skip(8) {
            let was = u64::from_le_bytes(old[k * 8..k * 8 + 8].try_into().unwrap());
            assert_eq!(*w, was, "word {k} of the second line was written");
        }
        assert_eq!(taken(&r, 2), frame(2, 64));
    }

    #[test]
    #[should_panic(expected = "with index 1")]
    fn a_frame_without_its_index_is_refused() {
        let r = Ring::new(2, 1);
        r.publish(slot(reserve(&r).unwrap()), &frame(7, 40));
    }

    #[test]
    fn lifted_frames_of_every_size_round_trip() {
        let r = Ring::new(2, 1);
        for n in [16, 21, INLINE, INLINE + 1, 70_000] {
            let idx = reserve(&r).unwrap();
            let want = frame(idx, n);
            r.publish(slot(idx), &want);
            assert_eq!(r.lift(idx).unwrap(), want);
            r.release(idx + 1);
        }
    }
}
