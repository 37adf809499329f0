//! A small seeded PRNG (SplitMix64) for the workload: reproducible from a
//! seed, and no dependency beyond what the crate has.
//!
//! Statistical quality hardly matters here; what matters is that the same
//! seed makes the same choices on every machine and every run.

/// SplitMix64: a 64-bit state advanced by a constant and mixed on output.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for stream `index` of `seed`: the workload's processes
    /// share a seed and must not make the same choices.
    pub(crate) fn stream(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        // Mix once, so that neighbouring streams start far apart.
        r.0 = r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; `n` must not be 0.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below(0)");
        // The modulo bias is negligible for the small n used here.
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent`/100.
    pub(crate) fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// A uniformly chosen element, or `None` from an empty slice.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            Some(&items[self.below(items.len())])
        }
    }
}
