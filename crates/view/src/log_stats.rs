//! `weir log stats` and `GET /v1/log/stats`: the log's sizes, indexes,
//! retention and consumers as one typed object, [`LogStats`], which the
//! daemon fills from
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
    /// The log's incarnation (32 hex digits), which with an index names a
    /// record across the directory's histories; null for a log no writer
    /// has opened since incarnations were introduced, or an older daemon.
    #[serde(default)]
    pub incarnation: Option<String>,
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
    /// The retention in force: the daemon's, or without it the one a
    /// writer opened from the CLI would apply. Null when unknown (an older
    /// daemon, or a configuration the CLI could not read).
    #[serde(default)]
    pub retention: Option<LogRetention>,
}

/// The limits and the floor that decide which segments are deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRetention {
    /// The size limit: the log's files, the spare included. It wins over
    /// the floor.
    pub max_bytes: u64,
    /// Without consumers, segments whose newest record is older are
    /// deleted; null: never.
    pub max_age_secs: Option<u64>,
    /// The floor's size: segments every consumer has cleared are kept
    /// while they hold any of the newest this many bytes; 0: no floor.
    pub keep_bytes: u64,
    /// The floor's age: those segments are kept only while their newest
    /// record is younger than this, in whole seconds rounded up; 0: no
    /// floor; null: of any age.
    pub keep_age_secs: Option<u64>,
}

impl From<&weir_log::Retention> for LogRetention {
    fn from(r: &weir_log::Retention) -> LogRetention {
        LogRetention {
            max_bytes: r.max_bytes,
            max_age_secs: r.max_age.map(|d| d.as_secs()),
            keep_bytes: r.keep_bytes,
            keep_age_secs: (r.keep_age != std::time::Duration::MAX)
                .then(|| r.keep_age.as_secs() + u64::from(r.keep_age.subsec_nanos() > 0)),
        }
    }
}

impl LogRetention {
    /// Whether the floor keeps anything.
    pub fn has_floor(&self) -> bool {
        self.keep_bytes > 0 && self.keep_age_secs != Some(0)
    }
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
    if let Some(i) = &s.incarnation {
        let _ = writeln!(out, "incarnation:  {i}");
    }
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
    if let Some(r) = &s.retention {
        retention_text(&mut out, r);
    }
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

/// The retention's lines.
fn retention_text(out: &mut String, r: &LogRetention) {
    let _ = writeln!(out, "size limit:   {} bytes", r.max_bytes);
    if let Some(age) = r.max_age_secs {
        let _ = writeln!(out, "age limit:    {age} s (without consumers)");
    }
    if !r.has_floor() {
        let _ = writeln!(
            out,
            "floor:        none (what every consumer has cleared is deleted)"
        );
        return;
    }
    let age = r
        .keep_age_secs
        .map_or_else(|| "of any age".to_owned(), |a| format!("up to {a} s old"));
    let _ = writeln!(
        out,
        "floor:        the newest {} bytes, {age}, stay once every consumer has cleared them",
        r.keep_bytes
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> LogStats {
        LogStats {
            dir: "/l".into(),
            incarnation: Some("00112233445566778899aabbccddeeff".into()),
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
            retention: None,
        }
    }

    #[test]
    fn json_keys_by_name_and_a_null_for_unknown() {
        assert_eq!(
            stats().to_json(),
            r#"{"allocated_bytes":4096,"bytes":8,"consumers":[{"cleared":1,"id":2,"idle_seconds":5.5,"lag":2,"mask":"all","name":"ix","registered":9}],"dir":"/l","first_index":1,"incarnation":"00112233445566778899aabbccddeeff","last_index":3,"poisoned":null,"records":3,"retention":null,"segments":1,"spare_bytes":0}"#
        );
    }

    #[test]
    fn text_says_what_is_there() {
        let t = text(&stats());
        assert!(
            t.starts_with("log:          /l\nincarnation:  00112233445566778899aabbccddeeff\nsegments:     1\n"),
            "{t}"
        );
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
        assert!(!t.contains("floor:") && !t.contains("limit:"), "{t}");
    }

    #[test]
    fn the_retention_in_json_and_text() {
        let mut r = weir_log::Retention {
            max_bytes: 4 << 30,
            keep_bytes: 256 << 20,
            keep_age: std::time::Duration::from_secs(604_800),
            ..weir_log::Retention::default()
        };
        let mut s = stats();
        s.retention = Some(LogRetention::from(&r));
        let json = s.to_json();
        assert!(
            json.contains(
                r#""retention":{"keep_age_secs":604800,"keep_bytes":268435456,"max_age_secs":null,"max_bytes":4294967296}"#
            ),
            "{json}"
        );
        let back: LogStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let t = text(&s);
        assert!(
            t.contains(
                "\nrecords:      3\nsize limit:   4294967296 bytes\n\
                 floor:        the newest 268435456 bytes, up to 604800 s old, \
                 stay once every consumer has cleared them\nconsumers:"
            ),
            "{t}"
        );
        // No floor, an age limit; a floor of any age; a part of a second
        // is not shown as no floor.
        r.keep_bytes = 0;
        r.max_age = Some(std::time::Duration::from_secs(60));
        s.retention = Some(LogRetention::from(&r));
        let t = text(&s);
        assert!(
            t.contains("\nage limit:    60 s (without consumers)\n"),
            "{t}"
        );
        assert!(
            t.contains("\nfloor:        none (what every consumer"),
            "{t}"
        );
        r.keep_bytes = 1;
        r.keep_age = std::time::Duration::MAX;
        let shown = LogRetention::from(&r);
        assert_eq!(shown.keep_age_secs, None);
        s.retention = Some(shown);
        assert!(text(&s).contains("the newest 1 bytes, of any age,"));
        r.keep_age = std::time::Duration::from_millis(1);
        assert_eq!(LogRetention::from(&r).keep_age_secs, Some(1));
        r.keep_age = std::time::Duration::ZERO;
        assert!(!LogRetention::from(&r).has_floor());
    }

    #[test]
    fn an_older_daemons_stats_have_no_retention() {
        let mut v: serde_json::Value = serde_json::from_str(&stats().to_json()).unwrap();
        v.as_object_mut().unwrap().remove("retention");
        let s: LogStats = serde_json::from_value(v).unwrap();
        assert_eq!(s.retention, None);
    }
}
