//! LVM's CRC-32, which guards the label sector, the mda_header and every
//! metadata text.
//!
//! It is the reflected CRC-32 of zlib (polynomial 0xEDB88320) with one
//! difference: the register starts at [`INITIAL`] (0xf597a6cf) instead of
//! 0xffffffff, and the result is not inverted at the end (lvm2's
//! `calc_crc(INITIAL_CRC, buf, size)`, lib/misc/crc.c). crc32fast keeps its
//! state inverted on both sides (`new_with_initial(v)` continues a zlib CRC
//! whose value was `v`), so starting from `INITIAL ^ !0` and inverting the
//! final value gives LVM's CRC with crc32fast's fast kernels.

/// The value LVM's CRC register starts from (lvm2's `INITIAL_CRC`).
pub const INITIAL: u32 = 0xf597_a6cf;

/// LVM's CRC of `bytes`.
pub fn calc(bytes: &[u8]) -> u32 {
    let mut crc = Crc::new();
    crc.update(bytes);
    crc.finish()
}

/// LVM's CRC, fed piece by piece: a metadata text that wraps around its
/// circular buffer is checksummed over its two pieces as one.
#[derive(Clone, Debug)]
pub struct Crc {
    hasher: crc32fast::Hasher,
}

impl Crc {
    /// A CRC over no bytes yet.
    pub fn new() -> Crc {
        Crc {
            hasher: crc32fast::Hasher::new_with_initial(INITIAL ^ 0xffff_ffff),
        }
    }

    /// Feeds the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
    }

    /// The CRC of everything fed so far.
    pub fn finish(self) -> u32 {
        self.hasher.finalize() ^ 0xffff_ffff
    }
}

impl Default for Crc {
    fn default() -> Crc {
        Crc::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition, one bit at a time, as lvm2's table-less form does:
    /// shift right, XOR the reflected polynomial when the low bit is set.
    fn bitwise(bytes: &[u8]) -> u32 {
        let mut crc = INITIAL;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn empty_input_is_the_initial_value() {
        assert_eq!(calc(&[]), INITIAL);
    }

    #[test]
    fn matches_the_bitwise_definition() {
        let text = b"weirfx {\nid = \"x\"\nseqno = 1\n}\n\0";
        assert_eq!(calc(text), bitwise(text));
        assert_ne!(calc(text), crc32fast::hash(text), "not zlib's CRC");
    }

    proptest! {
        #[test]
        fn any_bytes_match_bitwise(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            prop_assert_eq!(calc(&bytes), bitwise(&bytes));
        }

        #[test]
        fn split_anywhere_equals_whole(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            cut in any::<prop::sample::Index>(),
        ) {
            let at = cut.index(bytes.len() + 1);
            let mut crc = Crc::new();
            crc.update(&bytes[..at]);
            crc.update(&bytes[at..]);
            prop_assert_eq!(crc.finish(), calc(&bytes));
        }
    }
}
