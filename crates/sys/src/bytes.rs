//! Native-endian field reads from kernel answers held in byte slices.
//!
//! The decoders read kernel structs out of `&[u8]` with these instead of
//! casting pointers: no alignment or length assumptions, so the decoders are
//! safe code, total on any input, and fuzzable. A read past the end is
//! `None`, never a panic.

/// The `u16` at byte offset `off`, if the slice holds it.
pub(crate) fn u16_at(buf: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(
        buf.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// The `u32` at byte offset `off`, if the slice holds it.
pub(crate) fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        buf.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The `i32` at byte offset `off`, if the slice holds it.
pub(crate) fn i32_at(buf: &[u8], off: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(
        buf.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The `u64` at byte offset `off`, if the slice holds it.
pub(crate) fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(
        buf.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// A kernel `u32` length or offset as a `usize`; saturates where `usize` is
/// narrower, so a huge value still fails the bounds check that follows.
pub(crate) fn len(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_and_refuses_outside() {
        let b = [1u8, 0, 0, 0, 2, 0, 0, 0, 3];
        assert_eq!(u32_at(&b, 0), Some(u32::from_ne_bytes([1, 0, 0, 0])));
        assert_eq!(
            u64_at(&b, 0),
            Some(u64::from_ne_bytes([1, 0, 0, 0, 2, 0, 0, 0]))
        );
        assert_eq!(
            u64_at(&b, 1),
            Some(u64::from_ne_bytes([0, 0, 0, 2, 0, 0, 0, 3]))
        );
        assert_eq!(u64_at(&b, 2), None);
        assert_eq!(u16_at(&b, 8), None);
        assert_eq!(i32_at(&b, usize::MAX - 1), None);
    }
}
