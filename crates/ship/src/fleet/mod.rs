//! Reading a fleet back: every host's records merged (`weir fleet
//! tail`), and where each host stands (`weir fleet status`), from
//! JetStream ([`nats`]) or Kafka ([`kafka`]).
//!
//! Readers leave no state on the broker: JetStream's is an ordered
//! consumer gone when it stops, Kafka's an assignment that commits
//! nothing. Each host's records come in its own order (its shipper sends
//! a batch only once the last is stored, and on Kafka all of a host's
//! records are in one partition).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use weir_log::TypeMask;

pub mod kafka;
pub mod nats;

pub use self::nats::{status, tail};

/// A glob over host names: `*` any run of characters, `?` one, anything
/// else itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGlob(String);

impl HostGlob {
    /// The glob `text`.
    pub fn new(text: impl Into<String>) -> HostGlob {
        HostGlob(text.into())
    }

    /// The one host the glob names, if it has no wildcard.
    pub(crate) fn literal(&self) -> Option<&str> {
        (!self.0.contains(['*', '?'])).then_some(self.0.as_str())
    }

    /// Whether `host` matches.
    pub fn matches(&self, host: &str) -> bool {
        let (p, s): (Vec<char>, Vec<char>) = (self.0.chars().collect(), host.chars().collect());
        // The classic two-pointer match with one backtrack point.
        let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
        while j < s.len() {
            if i < p.len() && (p[i] == '?' || p[i] == s[j]) {
                i += 1;
                j += 1;
            } else if i < p.len() && p[i] == '*' {
                star = Some(i);
                mark = j;
                i += 1;
            } else if let Some(st) = star {
                i = st + 1;
                mark += 1;
                j = mark;
            } else {
                return false;
            }
        }
        p[i..].iter().all(|&c| c == '*')
    }
}

/// What `weir fleet tail` reads.
#[derive(Debug, Clone)]
pub struct TailOptions {
    /// The hosts (`None`: all).
    pub hosts: Option<HostGlob>,
    /// The types shown.
    pub mask: TypeMask,
    /// Wait for new records after the stream's end.
    pub follow: bool,
}

impl TailOptions {
    /// Whether a record read is one to show.
    pub(crate) fn wants(&self, s: &crate::wire::Shipped) -> bool {
        self.mask.contains(s.record.kind) && self.hosts.as_ref().is_none_or(|g| g.matches(&s.host))
    }
}

/// One host as `weir fleet status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetHost {
    /// The host's name.
    pub host: String,
    /// The incarnation of its log's last shipped record.
    pub incarnation: String,
    /// Its records in the stream (null on Kafka, which cannot count a
    /// key's records).
    pub records: Option<u64>,
    /// The index of its last shipped record.
    pub last_index: u64,
    /// That record's time, ns since the epoch (null on Kafka).
    pub last_time: Option<u64>,
    /// The last index of the host's log, as its shipper last said (null
    /// before the shipper has said).
    pub log_last_index: Option<u64>,
    /// Records the host has that the stream does not yet (null when not
    /// known).
    pub lag: Option<u64>,
    /// When the shipper last said it, ns since the epoch.
    pub status_time: Option<u64>,
}

/// `weir fleet status`'s table, each line ending in `\n`.
pub fn status_text(hosts: &[FleetHost]) -> String {
    let mut out = String::new();
    let width = hosts.iter().map(|h| h.host.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:>12}  {:>10}  {:<30}  {:>8}",
        "HOST", "LAST_INDEX", "RECORDS", "LAST_TIME", "LAG"
    );
    for h in hosts {
        let dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
        let _ = writeln!(
            out,
            "{:<width$}  {:>12}  {:>10}  {:<30}  {:>8}",
            h.host,
            h.last_index,
            dash(h.records.map(|r| r.to_string())),
            dash(h.last_time.map(weir_view::time::rfc3339_ns)),
            dash(h.lag.map(|l| l.to_string()))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_a_shell_does() {
        let g = |p: &str, s: &str| HostGlob::new(p).matches(s);
        assert!(g("db-*", "db-1") && g("db-*", "db-") && g("*", "") && g("d?-1", "db-1"));
        assert!(g("*.example", "a.b.example") && g("a*b*c", "aXbYc"));
        assert!(!g("db-*", "web-1") && !g("d?", "d") && !g("a*b", "a") && !g("x", "xy"));
        assert_eq!(HostGlob::new("db-1").literal(), Some("db-1"));
        assert_eq!(HostGlob::new("db-*").literal(), None);
    }

    #[test]
    fn the_table_has_a_row_per_host() {
        let h = FleetHost {
            host: "db-1".into(),
            incarnation: "00".repeat(16),
            records: Some(3),
            last_index: 3,
            last_time: Some(0),
            log_last_index: Some(5),
            lag: Some(2),
            status_time: Some(0),
        };
        let t = status_text(&[h]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2, "{t}");
        assert!(
            lines[0].starts_with("HOST  ") && lines[1].starts_with("db-1  "),
            "{t}"
        );
        assert!(lines[1].ends_with("       2"), "{t}");
    }
}
