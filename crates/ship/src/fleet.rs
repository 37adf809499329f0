//! Reading a fleet back from JetStream: every host's records merged
//! (`weir fleet tail`), and where each host stands (`weir fleet status`).
//!
//! The tail is an ordered consumer, made by the reader and gone when it
//! stops, so reading leaves no state on the broker. Records come in the
//! stream's order, which keeps each host's own order (its shipper sends a
//! batch only once the last is stored).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use futures_util::{StreamExt as _, TryStreamExt as _};
use serde::{Deserialize, Serialize};
use weir_log::TypeMask;

use crate::error::{Error, Result};
use crate::nats::{Nats, STATUS_PREFIX};
use crate::wire::{self, Progress, SUBJECT_PREFIX, Shipped};

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
    fn literal(&self) -> Option<&str> {
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

/// Hands `emit` every record of the stream that the options select, in
/// stream order; returns how many. Without `follow`, it stops at the
/// stream's last message as of the start.
pub async fn tail(
    nats: &Nats,
    o: &TailOptions,
    mut emit: impl FnMut(&Shipped) -> std::io::Result<()>,
) -> Result<u64> {
    let filter = match o.hosts.as_ref().and_then(HostGlob::literal) {
        Some(h) => wire::host_subjects(&wire::host_token(h)),
        None => format!("{SUBJECT_PREFIX}.>"),
    };
    let consumer = nats
        .stream()
        .create_consumer(pull::OrderedConfig {
            filter_subject: filter,
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|e| Error::JetStream {
            op: "create ordered consumer",
            source: e.into(),
        })?;
    if !o.follow && consumer.cached_info().num_pending == 0 {
        return Ok(0);
    }
    let mut messages = consumer.messages().await.map_err(|e| Error::JetStream {
        op: "read messages",
        source: e.into(),
    })?;
    let mut n = 0;
    while let Some(m) = messages.next().await {
        let m = m.map_err(|e| Error::JetStream {
            op: "read messages",
            source: e.into(),
        })?;
        let (seq, pending) = m
            .info()
            .map(|i| (i.stream_sequence, i.pending))
            .map_err(|e| Error::JetStream {
                op: "message metadata",
                source: e,
            })?;
        let s = wire::decode(&m.payload).map_err(|source| Error::BadMessage {
            sequence: seq,
            subject: m.subject.to_string(),
            source,
        })?;
        let wanted =
            o.mask.contains(s.record.kind) && o.hosts.as_ref().is_none_or(|g| g.matches(&s.host));
        if wanted {
            emit(&s).map_err(Error::Output)?;
            n += 1;
        }
        if !o.follow && pending == 0 {
            break;
        }
    }
    Ok(n)
}

/// One host as `weir fleet status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetHost {
    /// The host's name.
    pub host: String,
    /// The incarnation of its log's last shipped record.
    pub incarnation: String,
    /// Its records in the stream.
    pub records: u64,
    /// The index of its last shipped record.
    pub last_index: u64,
    /// That record's time, ns since the epoch.
    pub last_time: u64,
    /// The last index of the host's log, as its shipper last said (null
    /// before the shipper has said).
    pub log_last_index: Option<u64>,
    /// Records the host has that the stream does not yet (null when not
    /// known).
    pub lag: Option<u64>,
    /// When the shipper last said it, ns since the epoch.
    pub status_time: Option<u64>,
}

/// Every host in the stream, by name.
pub async fn status(nats: &Nats) -> Result<Vec<FleetHost>> {
    let js_err = |op| move |source| Error::JetStream { op, source };
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut subjects = nats
        .stream()
        .info_with_subjects(format!("{SUBJECT_PREFIX}.>"))
        .await
        .map_err(|e| js_err("stream subjects")(e.into()))?;
    while let Some((subject, count)) = subjects
        .try_next()
        .await
        .map_err(|e| js_err("stream subjects")(e.into()))?
    {
        if let Some(token) = subject.split('.').nth(1) {
            *counts.entry(token.to_owned()).or_default() += count as u64;
        }
    }
    let mut out = Vec::with_capacity(counts.len());
    for (token, records) in counts {
        let Some(last) = nats.last(&token).await? else {
            continue;
        };
        let progress = progress(nats, &token).await?;
        let incarnation = last.incarnation.to_string();
        let same = progress.as_ref().filter(|p| p.incarnation == incarnation);
        out.push(FleetHost {
            host: last.host,
            incarnation,
            records,
            last_index: last.record.index,
            last_time: last.record.time_ns,
            log_last_index: same.map(|p| p.last_index),
            lag: same.map(|p| p.last_index.saturating_sub(last.record.index)),
            status_time: progress.map(|p| p.time),
        });
    }
    out.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(out)
}

async fn progress(nats: &Nats, token: &str) -> Result<Option<Progress>> {
    match nats
        .status_stream()
        .get_last_raw_message_by_subject(&format!("{STATUS_PREFIX}.{token}"))
        .await
    {
        // A progress message that does not parse only leaves the lag
        // unknown.
        Ok(m) => Ok(serde_json::from_slice(&m.payload).ok()),
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
        Err(e) => Err(Error::JetStream {
            op: "progress message",
            source: e.into(),
        }),
    }
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
        let lag = h.lag.map_or_else(|| "-".to_owned(), |l| l.to_string());
        let _ = writeln!(
            out,
            "{:<width$}  {:>12}  {:>10}  {:<30}  {:>8}",
            h.host,
            h.last_index,
            h.records,
            weir_view::time::rfc3339_ns(h.last_time),
            lag
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
            records: 3,
            last_index: 3,
            last_time: 0,
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
