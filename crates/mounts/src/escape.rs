//! mountinfo's octal escapes.
//!
//! The kernel writes paths, the source and the filesystem type with
//! `seq_escape`, which turns each byte of a chosen set into a backslash and
//! three octal digits. For mountinfo the set is space, tab, newline and
//! backslash ([`MANGLE`]), the bytes that would break the line into fields;
//! filesystems that print options with `seq_show_option` add `,` (and `=` in
//! option names). Every other byte, 0xff included, is written as it is.
//!
//! [`decode`] undoes any such escape; [`encode`] writes the kernel's form.

use std::borrow::Cow;

/// The bytes mountinfo escapes in every field: space, tab, newline and
/// backslash (the kernel's `mangle()`).
pub const MANGLE: &[u8] = b" \t\n\\";

/// Decodes every `\ooo` escape (three octal digits, at most `\377`) into
/// its byte. A backslash not followed by such a triple is kept as it is:
/// hostile input never fails.
///
/// Borrows `field` when it holds no backslash, the common case.
pub fn decode(field: &[u8]) -> Cow<'_, [u8]> {
    let Some(first) = find(field, b'\\') else {
        return Cow::Borrowed(field);
    };
    let mut out = Vec::with_capacity(field.len());
    out.extend_from_slice(&field[..first]);
    let mut i = first;
    while i < field.len() {
        let b = field[i];
        if b == b'\\'
            && let Some(v) = octal(&field[i + 1..])
        {
            out.push(v);
            i += 4;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// The index of the first `needle` in `hay`.
///
/// Eight bytes at a time: the parser and the decoder scan every byte of a
/// large table for separators and backslashes, and a byte-by-byte loop
/// with an early exit is not vectorized.
pub(crate) fn find(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        // Bytes equal to `needle` become zero; the classic zero-byte test
        // may also flag bytes above a zero one, but never below it, so
        // the lowest flag is exact.
        let x = u64::from_le_bytes(word) ^ pattern;
        let zero = x.wrapping_sub(LO) & !x & HI;
        if zero != 0 {
            return Some(base + (zero.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    let tail = chunks.remainder().iter().position(|&b| b == needle)?;
    Some(base + tail)
}

/// The byte of an escape's three octal digits at the start of `s`, if they
/// are there and fit a byte.
fn octal(s: &[u8]) -> Option<u8> {
    let [a, b, c, ..] = *s else {
        return None;
    };
    // The first digit only goes to 3: `\400` and up do not fit a byte, and
    // the kernel never writes them.
    if !(b'0'..=b'3').contains(&a) || !is_octal(b) || !is_octal(c) {
        return None;
    }
    Some(((a - b'0') << 6) | ((b - b'0') << 3) | (c - b'0'))
}

fn is_octal(b: u8) -> bool {
    (b'0'..=b'7').contains(&b)
}

/// `bytes` escaped as the kernel escapes a mountinfo field: each of space,
/// tab, newline and backslash becomes `\040`, `\011`, `\012`, `\134`.
pub fn encode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    escape_into(bytes, MANGLE, &mut out);
    out
}

/// Appends `bytes` to `out` with every byte found in `set` written as
/// `\ooo`, like the kernel's `seq_escape(m, s, set)`.
pub fn escape_into(bytes: &[u8], set: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        if set.contains(&b) {
            push_octal(b, out);
        } else {
            out.push(b);
        }
    }
}

/// Appends `b` as `\ooo`.
pub fn push_octal(b: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(&[
        b'\\',
        b'0' + (b >> 6),
        b'0' + ((b >> 3) & 7),
        b'0' + (b & 7),
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_the_kernel_escapes() {
        assert_eq!(&*decode(br"/mnt/a\040b"), b"/mnt/a b");
        assert_eq!(&*decode(br"/mnt/new\012line"), b"/mnt/new\nline");
        assert_eq!(&*decode(br"tab\011x"), b"tab\tx");
        assert_eq!(&*decode(br"back\134slash"), b"back\\slash");
        assert_eq!(&*decode(br"\134\054x"), b"\\,x");
        assert_eq!(&*decode(br"\377\000"), b"\xff\0");
        assert_eq!(&*decode(br"\040\040"), b"  ");
    }

    #[test]
    fn keeps_backslashes_that_start_no_escape() {
        for s in [
            &br"\"[..],
            br"a\",
            br"a\0",
            br"a\04",
            br"\400",
            br"\777",
            br"\08x",
            br"\x41",
            br"\\",
        ] {
            assert_eq!(&*decode(s), s, "{:?}", String::from_utf8_lossy(s));
        }
        // A stray backslash before a real escape: only the escape decodes.
        assert_eq!(&*decode(br"\\040"), b"\\ ");
        assert_eq!(&*decode(br"\0401"), b" 1");
    }

    #[test]
    fn borrows_without_backslash() {
        assert!(matches!(decode(b"/usr/lib\xff"), Cow::Borrowed(_)));
        assert!(matches!(decode(br"/a\040b"), Cow::Owned(_)));
    }

    #[test]
    fn encodes_like_the_kernel() {
        assert_eq!(
            encode(b"a b\tc\nd\\e,f=\xff"),
            b"a\\040b\\011c\\012d\\134e,f=\xff"
        );
        let mut out = Vec::new();
        escape_into(b"x,y", b",", &mut out);
        assert_eq!(out, br"x\054y");
    }

    proptest! {
        #[test]
        fn find_agrees_with_position(
            hay in proptest::collection::vec(prop_oneof![Just(b' '), Just(0x80u8), any::<u8>()], 0..40),
            needle in prop_oneof![Just(b' '), any::<u8>()],
        ) {
            prop_assert_eq!(find(&hay, needle), hay.iter().position(|&b| b == needle));
        }

        #[test]
        fn decode_undoes_encode(x in proptest::collection::vec(any::<u8>(), 0..64)) {
            let e = encode(&x);
            prop_assert_eq!(&*decode(&e), &x[..]);
        }

        #[test]
        fn encoded_has_no_separators(x in proptest::collection::vec(any::<u8>(), 0..64)) {
            let e = encode(&x);
            prop_assert!(!e.iter().any(|b| b" \t\n".contains(b)));
        }

        #[test]
        fn decode_never_panics(x in proptest::collection::vec(
            prop_oneof![Just(b'\\'), b'0'..=b'9', any::<u8>()], 0..64)) {
            let d = decode(&x);
            // Escapes only shrink.
            prop_assert!(d.len() <= x.len());
        }

        #[test]
        fn decode_is_identity_without_backslash(
            x in proptest::collection::vec(any::<u8>().prop_filter("no backslash", |&b| b != b'\\'), 0..64)
        ) {
            prop_assert!(matches!(decode(&x), Cow::Borrowed(b) if b == &x[..]));
        }
    }
}
