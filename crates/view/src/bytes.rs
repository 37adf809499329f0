//! How raw bytes show. Paths, names and field values are bytes that need
//! not be UTF-8, and nothing may be lost on the way out:
//! - in JSON ([`Bytes`]), a string when they are valid UTF-8, otherwise an
//!   array of byte values (0-255), the journald `-o json` convention;
//! - in text ([`escape`]), UTF-8 with control characters and stray bytes
//!   escaped, so that a line stays one line and shows every byte;
//! - opaque ids ([`hex`]) as lowercase hex.

use std::fmt::Write as _;

use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

/// Bytes as a string if they are UTF-8, else as an array of numbers. Also
/// the form of paths in `weir mounts --json`.
pub struct Bytes<'a>(pub &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for b in self.0 {
                    seq.serialize_element(b)?;
                }
                seq.end()
            }
        }
    }
}

/// Lowercase hex of opaque id bytes.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Shows bytes as text: valid UTF-8 stays as it is, except that a backslash
/// becomes `\\` and control characters become `\xNN` (below U+0080) or
/// `\u{N}`; every byte that is not part of valid UTF-8 becomes `\xNN`.
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                c if c.is_control() && u32::from(c) < 0x80 => {
                    let _ = write!(s, "\\x{:02x}", u32::from(c));
                }
                c if c.is_control() => {
                    let _ = write!(s, "\\u{{{:x}}}", u32::from(c));
                }
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape(b"plain name.txt"), "plain name.txt");
        assert_eq!(escape(b"caf\xe9"), "caf\\xe9");
        assert_eq!(escape("café".as_bytes()), "café");
        assert_eq!(escape(b"a\nb\\c\x7f"), "a\\x0ab\\\\c\\x7f");
        assert_eq!(escape("\u{85}".as_bytes()), "\\u{85}");
        // A lone continuation byte and a truncated sequence.
        assert_eq!(escape(b"\x80x\xe2\x82"), "\\x80x\\xe2\\x82");
    }
}
