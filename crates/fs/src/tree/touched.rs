//! Which directories changed since a checkpoint last took them, and which
//! were removed: what a persistent copy of the tree must rewrite.
//!
//! A checkpoint rewrites a directory whole (its location and its
//! entries), so one bit per directory slot is all the tree keeps, set at
//! the two places an entry joins or leaves a directory's list, whatever
//! change did it: a directory is touched when an entry is linked into or
//! unlinked from it, and when it is itself linked somewhere (created or
//! moved). Removed directories are kept by id, since their slots are
//! reused; a persistent copy drops each one with its entries.
//!
//! A second bit per slot says the copy holds the directory without its
//! times: it was taken while they were forgotten (a change applied since
//! they were last taken). Until a stop takes times again for it, every
//! restart would read it; so the stop counts it as touched too.

use crate::id::ObjectId;

/// A set of directory slots.
#[derive(Clone, Debug, Default)]
struct Slots {
    bits: Vec<u64>,
    count: usize,
}

impl Slots {
    fn mark(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, d % 64);
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.count += 1;
        }
    }

    fn clear(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, d % 64);
        if let Some(word) = self.bits.get_mut(w)
            && *word & (1 << b) != 0
        {
            *word &= !(1 << b);
            self.count -= 1;
        }
    }

    fn next_from(&self, from: u32) -> Option<u32> {
        let mut w = from as usize / 64;
        let mut word = *self.bits.get(w)? & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some((w * 64) as u32 + word.trailing_zeros());
            }
            w += 1;
            word = *self.bits.get(w)?;
        }
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.next_from(0), |&d| self.next_from(d + 1))
    }
}

/// The touched directory slots, those the copy holds without times, and
/// the removed directories' ids.
#[derive(Clone, Debug, Default)]
pub(super) struct Touched {
    touched: Slots,
    untimed: Slots,
    pub(super) removed: Vec<ObjectId>,
}

impl Touched {
    /// Marks directory slot `d`.
    pub(super) fn mark(&mut self, d: u32) {
        self.touched.mark(d);
    }

    /// Clears directory slot `d`, taken.
    pub(super) fn clear(&mut self, d: u32) {
        self.touched.clear(d);
    }

    /// Forgets directory slot `d`, freed: neither touched nor untimed.
    pub(super) fn free(&mut self, d: u32) {
        self.touched.clear(d);
        self.untimed.clear(d);
    }

    /// Records whether the copy now holds slot `d` with its times.
    pub(super) fn taken_with_times(&mut self, d: u32, timed: bool) {
        if timed {
            self.untimed.clear(d);
        } else {
            self.untimed.mark(d);
        }
    }

    /// Counts slot `d` as held by the copy without times.
    pub(super) fn mark_untimed(&mut self, d: u32) {
        self.untimed.mark(d);
    }

    /// Touched slots.
    pub(super) fn count(&self) -> usize {
        self.touched.count
    }

    /// The lowest touched slot at or above `from`.
    pub(super) fn next_from(&self, from: u32) -> Option<u32> {
        self.touched.next_from(from)
    }

    /// Every touched slot, in order.
    pub(super) fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.touched.iter()
    }

    /// Every slot the copy holds without times, in order.
    pub(super) fn untimed(&self) -> impl Iterator<Item = u32> + '_ {
        self.untimed.iter()
    }
}
