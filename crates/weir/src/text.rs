//! The text form of a record, one line each, in the spirit of Lustre's
//! `lfs changelog`:
//!
//! ```text
//! INDEX TYPE TIME flags=0xF t=HEX p=HEX NAME [KEY=VALUE ...]
//! ```
//!
//! Names and values are escaped so that a line stays one line and shows
//! every byte: see [`escape`]. The form is for people; `--json` is for
//! programs.

use std::fmt::Write as _;

use weir_log::LogRecord;

use crate::time_fmt::rfc3339_ns;

/// One record as a text line, without the newline.
pub(crate) fn record_line(r: &LogRecord) -> String {
    let mut s = format!(
        "{} {} {} flags={:#x} t={} p={} {}",
        r.index,
        r.kind,
        rfc3339_ns(r.time_ns),
        r.flags,
        hex(&r.target),
        hex(&r.parent),
        escape(&r.name)
    );
    for (k, v) in &r.fields {
        let _ = write!(s, " {}={}", escape(k.as_bytes()), escape(v));
    }
    s
}

/// Lowercase hex of opaque id bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Shows bytes as text: valid UTF-8 stays as it is, except that a backslash
/// becomes `\\` and control characters become `\xNN` (below U+0080) or
/// `\u{N}`; every byte that is not part of valid UTF-8 becomes `\xNN`.
pub(crate) fn escape(bytes: &[u8]) -> String {
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
    use weir_log::RecordType;

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
    fn line() {
        let r = LogRecord {
            index: 42,
            time_ns: 1_000_000_007,
            kind: RecordType::CREAT,
            flags: 0x12,
            target: vec![0xab, 0x01],
            parent: vec![],
            name: b"f\xff".to_vec(),
            fields: vec![("k".into(), b"v 1".to_vec())],
        };
        assert_eq!(
            record_line(&r),
            "42 CREAT 1970-01-01T00:00:01.000000007Z flags=0x12 t=ab01 p= f\\xff k=v 1"
        );
    }
}
