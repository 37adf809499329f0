//! How raw bytes show. Paths, names and field values are bytes that need
//! not be UTF-8, and nothing may be lost on the way out:
//! - in JSON ([`Bytes`]), a string when they are valid UTF-8, otherwise an
//!   array of byte values (0-255), the journald `-o json` convention;
//!   [`ByteBuf`] owns such bytes and reads either form back;
//! - in text ([`escape`]), UTF-8 with control characters and stray bytes
//!   escaped, so that a line stays one line and shows every byte;
//! - opaque ids ([`hex`]) as lowercase hex.

use std::fmt::Write as _;

use serde::de::Deserializer;
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

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

/// Owned bytes in the same JSON form as [`Bytes`], read back from either
/// form: a string, or an array of byte values. For the objects the daemon
/// serves and the CLI reads back (a watched root's path in `/v1/status`),
/// so that no byte of a path is lost on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteBuf(pub Vec<u8>);

impl Serialize for ByteBuf {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Bytes(&self.0).serialize(s)
    }
}

impl<'de> Deserialize<'de> for ByteBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Text(String),
            Raw(Vec<u8>),
        }
        Ok(ByteBuf(match Form::deserialize(d)? {
            Form::Text(s) => s.into_bytes(),
            Form::Raw(b) => b,
        }))
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

    #[test]
    fn owned_bytes_read_back_in_either_form() {
        for b in [&b"docs/a.txt"[..], b"caf\xe9", b""] {
            let text = serde_json::to_string(&ByteBuf(b.to_vec())).unwrap();
            assert_eq!(text, serde_json::to_string(&Bytes(b)).unwrap());
            assert_eq!(serde_json::from_str::<ByteBuf>(&text).unwrap().0, b);
        }
        assert_eq!(
            serde_json::to_string(&ByteBuf(b"\xff/x".to_vec())).unwrap(),
            "[255,47,120]"
        );
        assert!(serde_json::from_str::<ByteBuf>("[256]").is_err());
        assert!(serde_json::from_str::<ByteBuf>("7").is_err());
    }
}
