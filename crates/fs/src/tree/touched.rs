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

use crate::id::ObjectId;

/// The touched directory slots and the removed directories' ids.
#[derive(Clone, Debug, Default)]
pub(super) struct Touched {
    bits: Vec<u64>,
    count: usize,
    pub(super) removed: Vec<ObjectId>,
}

impl Touched {
    /// Marks directory slot `d`.
    pub(super) fn mark(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, d % 64);
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
        }
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.count += 1;
        }
    }

    /// Clears directory slot `d` (taken, or freed).
    pub(super) fn clear(&mut self, d: u32) {
        let (w, b) = (d as usize / 64, d % 64);
        if let Some(word) = self.bits.get_mut(w)
            && *word & (1 << b) != 0
        {
            *word &= !(1 << b);
            self.count -= 1;
        }
    }

    /// Touched slots.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// The lowest touched slot at or above `from`.
    pub(super) fn next_from(&self, from: u32) -> Option<u32> {
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

    /// Every touched slot, in order.
    pub(super) fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(self.next_from(0), |&d| self.next_from(d + 1))
    }
}
