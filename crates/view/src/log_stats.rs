//! `weir log stats` and `GET /v1/log/stats`: the log's sizes, indexes and
//! consumers as one typed object, [`LogStats`], which the daemon fills from
//! its running log and the CLI from the log's files, and its text form,
//! [`text`], which the CLI prints from either. The two paths cannot drift
//! apart.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::consumer::Consumer;
use crate::json::to_sorted_string;

/// The log's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogStats {
    /// The log's directory.
    pub dir: String,
    /// Segment files.
    pub segments: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes allocated on disk for them (`st_blocks * 512`).
    pub allocated_bytes: u64,
    /// The spare segment file's length (0 if none). Absent from a daemon
    /// older than the field.
    #[serde(default)]
    pub spare_bytes: u64,
    /// The oldest index kept.
    pub first_index: u64,
    /// The last index written.
    pub last_index: u64,
    /// Records kept.
    pub records: u64,
    /// The consumers.
    pub consumers: Vec<Consumer>,
    /// Whether an fsync failure has poisoned the log; null when unknown
    /// (read without the writer, which alone knows, or an older daemon).
    #[serde(default)]
    pub poisoned: Option<bool>,
}

impl LogStats {
    /// The object as `weir log stats --json` prints it, without the
    /// newline: compact, keys in the order of their names.
    pub fn to_json(&self) -> String {
        to_sorted_string(self)
    }
}

/// The text form, each line ending in `\n`.
pub fn text(s: &LogStats) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "log:          {}", s.dir);
    if s.poisoned == Some(true) {
        let _ = writeln!(
            out,
            "state:        POISONED: an fsync failed, so writes are refused \
             until the log is reopened (restart the daemon)"
        );
    }
    let _ = writeln!(out, "segments:     {}", s.segments);
    let _ = writeln!(
        out,
        "bytes:        {} (allocated on disk: {})",
        s.bytes, s.allocated_bytes
    );
    if s.spare_bytes > 0 {
        let _ = writeln!(
            out,
            "spare:        {} bytes (the next segment, zero-filled ahead)",
            s.spare_bytes
        );
    }
    let _ = writeln!(out, "first index:  {}", s.first_index);
    let _ = writeln!(out, "last index:   {}", s.last_index);
    let _ = writeln!(out, "records:      {}", s.records);
    let _ = writeln!(out, "consumers:    {}", s.consumers.len());
    for c in &s.consumers {
        let _ = writeln!(
            out,
            "  {} (id {}): cleared {}, lag {}, idle {} s, mask {}",
            c.name,
            c.id,
            c.cleared,
            c.lag,
            c.idle_secs(),
            c.mask
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> LogStats {
        LogStats {
            dir: "/l".into(),
            segments: 1,
            bytes: 8,
            allocated_bytes: 4096,
            spare_bytes: 0,
            first_index: 1,
            last_index: 3,
            records: 3,
            consumers: vec![Consumer {
                id: 2,
                name: "ix".into(),
                mask: "all".into(),
                cleared: 1,
                lag: 2,
                idle_seconds: 5.5,
                registered: 9,
            }],
            poisoned: None,
        }
    }

    #[test]
    fn json_keys_by_name_and_a_null_for_unknown() {
        assert_eq!(
            stats().to_json(),
            r#"{"allocated_bytes":4096,"bytes":8,"consumers":[{"cleared":1,"id":2,"idle_seconds":5.5,"lag":2,"mask":"all","name":"ix","registered":9}],"dir":"/l","first_index":1,"last_index":3,"poisoned":null,"records":3,"segments":1,"spare_bytes":0}"#
        );
    }

    #[test]
    fn text_says_what_is_there() {
        let t = text(&stats());
        assert!(t.starts_with("log:          /l\nsegments:     1\n"), "{t}");
        assert!(!t.contains("spare:") && !t.contains("POISONED"), "{t}");
        assert!(
            t.ends_with("consumers:    1\n  ix (id 2): cleared 1, lag 2, idle 5 s, mask all\n"),
            "{t}"
        );
        let mut s = stats();
        s.poisoned = Some(true);
        s.spare_bytes = 4096;
        let t = text(&s);
        assert!(t.contains("\nstate:        POISONED: "), "{t}");
        assert!(t.contains("\nspare:        4096 bytes "), "{t}");
    }
}
