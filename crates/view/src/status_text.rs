//! The summary `weir status` prints: a [`Status`] and, when the daemon
//! gave them, its consumers, as a few lines for people.
//!
//! ```text
//! weir 0.1.0, pid 1234, up 2h 5m 7s
//! state dir:  /var/lib/weir
//! socket:     /run/weir/weir.sock
//! mounts:     fanotify; 31 mounts; 12 events, 0 overflows, 3 readings, 12 changes, 0 reconciled
//! devices:    kernel uevents; 107 devices, 2 PVs, 1 VGs; 40 uevents seen, 3 changes, 0 reconciled
//! fs:         1 roots; 40 events, 38 records, 0 overflows, 2 syncs, 0 queued
//!   /srv: ext4, filesystem mark; 120 entries, 14 dirs; 12 events, 10 records, 1 verified, 0 compares
//! ship:       nats nats://broker:4222, stream WEIR, as db7; shipping; 5100 shipped, broker at 5120, lag 0, 0 in flight, 1 retries, 0 lost
//! log:        indexes 1-5120 (durable to 5120); 1 segments, 8388608 bytes
//! consumers:  1
//!   indexer (id 1): cleared 5100, lag 20, mask all
//! restart:    checkpoint_used=true devices=0 mounts=2 not_used_reason=none previous_clean=true
//! ```
//!
//! A source the daemon does not run shows as `off`; a figure it does not
//! report is left out, or shown as `?` where the line needs a word. The
//! daemon's strings are shown with control characters escaped, and a
//! watched root's path with the log's byte escaping, so that they cannot
//! forge lines or move the cursor on the terminal.

use std::fmt::{Display, Write as _};

use crate::bytes::escape;
use crate::consumer::Consumer;
use crate::status::{
    DevicesStatus, FsRootStatus, FsStatus, LogStatus, MountsStatus, ReconcileReport, ShipStatus,
    Status,
};

/// The summary, each line ending in `\n`.
pub fn summary(v: &Status, consumers: Option<&[Consumer]>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "weir {}, pid {}, up {}",
        words(v.version.as_deref()),
        shown(v.pid),
        v.uptime_seconds.map_or_else(|| "?".to_owned(), duration)
    );
    let _ = writeln!(s, "state dir:  {}", words(v.state_dir.as_deref()));
    let _ = writeln!(s, "socket:     {}", words(v.socket.as_deref()));
    let _ = writeln!(s, "mounts:     {}", mounts(v.mounts.as_ref()));
    let _ = writeln!(s, "devices:    {}", devices(v.devices.as_ref()));
    let _ = writeln!(s, "fs:         {}", fs(v.fs.as_ref()));
    for r in v.fs.iter().flat_map(|f| &f.roots) {
        let _ = writeln!(s, "  {}", fs_root(r));
    }
    let _ = writeln!(s, "ship:       {}", ship(v.ship.as_ref()));
    if let Some(e) = v.ship.as_ref().and_then(|h| h.last_error.as_deref()) {
        let _ = writeln!(s, "  last error: {}", printable(e));
    }
    let _ = writeln!(s, "log:        {}", log(&v.log));
    match consumers {
        Some(list) => {
            let _ = writeln!(s, "consumers:  {}", list.len());
            for c in list {
                let _ = writeln!(
                    s,
                    "  {} (id {}): cleared {}, lag {}, mask {}",
                    printable(&c.name),
                    c.id,
                    c.cleared,
                    c.lag,
                    printable(&c.mask)
                );
            }
        }
        None => {
            let _ = writeln!(s, "consumers:  {}", shown(v.log.consumers));
        }
    }
    if let Some(r) = &v.reconcile {
        let _ = writeln!(s, "restart:    {}", reconcile(r));
    }
    s
}

/// A source's first words, with a note when its thread stopped.
fn source_head(running: Option<bool>, head: String) -> String {
    match running {
        Some(false) => format!("{head} (stopped)"),
        _ => head,
    }
}

fn mounts(m: Option<&MountsStatus>) -> String {
    let Some(m) = m else {
        return "off".to_owned();
    };
    let fallback = match &m.fallback_reason {
        Some(why) => format!(" (fanotify unavailable: {})", printable(why)),
        None => String::new(),
    };
    let head = format!("{}{fallback}", words(m.backend.as_deref()));
    groups(&[
        source_head(m.running, head),
        figures(&[(m.count, "mounts")]),
        figures(&[
            (m.events, "events"),
            (m.overflows, "overflows"),
            (m.readings, "readings"),
            (m.changes, "changes"),
            (m.reconciled, "reconciled"),
        ]),
    ])
}

fn devices(d: Option<&DevicesStatus>) -> String {
    let Some(d) = d else {
        return "off".to_owned();
    };
    let head = format!("{} uevents", words(d.uevents.as_deref()));
    groups(&[
        source_head(d.running, head),
        figures(&[(d.devices, "devices"), (d.pvs, "PVs"), (d.vgs, "VGs")]),
        figures(&[
            (d.uevents_seen, "uevents seen"),
            (d.changes, "changes"),
            (d.reconciled, "reconciled"),
        ]),
    ])
}

fn fs(f: Option<&FsStatus>) -> String {
    let Some(f) = f else {
        return "off".to_owned();
    };
    groups(&[
        source_head(f.running, format!("{} roots", f.roots.len())),
        figures(&[
            (f.events, "events"),
            (f.records, "records"),
            (f.overflows, "overflows"),
            (f.syncs, "syncs"),
            (f.backlog, "queued"),
        ]),
    ])
}

fn ship(h: Option<&ShipStatus>) -> String {
    let Some(h) = h else {
        return "off".to_owned();
    };
    // Kafka's records go to a topic, JetStream's to a stream.
    let target = if h.sink.as_deref() == Some("kafka") {
        "topic"
    } else {
        "stream"
    };
    groups(&[
        format!(
            "{} {}, {target} {}, as {}",
            words(h.sink.as_deref()),
            words(h.url.as_deref()),
            words(h.stream.as_deref()),
            words(h.host.as_deref())
        ),
        words(h.state.as_deref()),
        [
            figures(&[(h.shipped, "shipped")]),
            h.acked_index
                .map(|i| format!("broker at {i}"))
                .unwrap_or_default(),
            h.lag.map(|l| format!("lag {l}")).unwrap_or_default(),
            figures(&[
                (h.in_flight, "in flight"),
                (h.retries, "retries"),
                (h.gap_records, "lost"),
            ]),
        ]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(", "),
    ])
}

/// A watched root's line: where, on what, how big, and what it logged.
fn fs_root(r: &FsRootStatus) -> String {
    let mut head = format!(
        "{}: {}, {} mark",
        escape(&r.path.0),
        words(r.fstype.as_deref()),
        words(r.mark.as_deref())
    );
    // Said only when the root is not simply watched: the first reading of
    // a big tree, or a watch that ended.
    if let Some(st) = r.state.as_deref().filter(|s| *s != "watching") {
        head.push_str(", ");
        head.push_str(&escape(st.as_bytes()));
    }
    // Long work under way: how far it has gone.
    if let Some(p) = &r.progress {
        head.push_str(", ");
        head.push_str(&escape(p.words().as_bytes()));
    }
    groups(&[
        head,
        figures(&[(r.entries, "entries"), (r.dirs, "dirs")]),
        figures(&[
            (r.events, "events"),
            (r.records, "records"),
            (r.verified, "verified"),
            (r.compares, "compares"),
        ]),
    ])
}

fn log(l: &LogStatus) -> String {
    let mut indexes = format!("indexes {}-{}", shown(l.first_index), shown(l.last_index));
    if let Some(d) = l.durable_index {
        let _ = write!(indexes, " (durable to {d})");
    }
    groups(&[
        indexes,
        figures(&[(l.segments, "segments"), (l.bytes, "bytes")]),
        durable_waits(l),
    ])
}

/// `N durable waits (M slept, polling shut K times)`, once there were some:
/// how many durable waiters polled for their record rather than slept, and
/// whether polling was shut (see `weir_log::Stats::durable_sleeps`).
fn durable_waits(l: &LogStatus) -> String {
    match l.durable_waits {
        Some(n) if n > 0 => format!(
            "{n} durable waits ({} slept, polling shut {} times)",
            shown(l.durable_sleeps),
            shown(l.durable_poll_shuts)
        ),
        _ => String::new(),
    }
}

/// The start's report as `key=value` pairs, `none` for a null, keys in the
/// order of their names (as the JSON object has them).
fn reconcile(r: &ReconcileReport) -> String {
    let none = |v: Option<String>| v.unwrap_or_else(|| "none".to_owned());
    format!(
        "checkpoint_used={} devices={} mounts={} not_used_reason={} previous_clean={}",
        r.checkpoint_used,
        none(r.devices.map(|n| n.to_string())),
        none(r.mounts.map(|n| n.to_string())),
        none(r.not_used_reason.as_deref().map(printable)),
        none(r.previous_clean.map(|b| b.to_string())),
    )
}

/// `N label` for each figure reported, comma-separated.
fn figures(items: &[(Option<u64>, &str)]) -> String {
    items
        .iter()
        .filter_map(|(n, label)| n.map(|n| format!("{n} {label}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The non-empty groups, `; `-separated.
fn groups(parts: &[String]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join("; ")
}

/// A figure, or `?` when the daemon did not report it.
fn shown<T: Display>(v: Option<T>) -> String {
    v.map_or_else(|| "?".to_owned(), |v| v.to_string())
}

/// The daemon's words, printable, or `?` when it did not say.
fn words(v: Option<&str>) -> String {
    v.map_or_else(|| "?".to_owned(), printable)
}

/// The daemon's words with control characters escaped.
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Seconds as `3d 4h 5m 6s`, leaving out leading zero units.
fn duration(secs: f64) -> String {
    // Saturating and NaN-safe: a hostile figure cannot panic here.
    let total = secs.max(0.0) as u64;
    let (d, h, m, s) = (
        total / 86_400,
        total / 3600 % 24,
        total / 60 % 60,
        total % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m {s}s"),
        _ => format!("{d}d {h}h {m}m {s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(65.0), "1m 5s");
        assert_eq!(duration(3.0 * 3600.0 + 7.0), "3h 0m 7s");
        assert_eq!(duration(90_061.0), "1d 1h 1m 1s");
        assert_eq!(duration(f64::NAN), "0s");
        assert_eq!(duration(-5.0), "0s");
    }

    #[test]
    fn summary_shows_what_is_there_and_leaves_out_what_is_not() {
        let v = Status {
            version: Some("0.1.0".into()),
            pid: Some(42),
            uptime_seconds: Some(61.5),
            state_dir: Some("/var/lib/weir".into()),
            socket: Some("/run/weir/weir.sock".into()),
            mounts: Some(MountsStatus {
                backend: Some("mountinfo".into()),
                fallback_reason: Some("no\npermission".into()),
                count: Some(30),
                events: Some(5),
                running: Some(false),
                ..MountsStatus::default()
            }),
            devices: None,
            log: LogStatus {
                first_index: Some(1),
                last_index: Some(9),
                durable_index: Some(8),
                segments: Some(1),
                bytes: Some(4096),
                consumers: Some(1),
                ..LogStatus::default()
            },
            reconcile: Some(ReconcileReport {
                checkpoint_used: true,
                mounts: Some(2),
                ..ReconcileReport::default()
            }),
            ..Status::default()
        };
        let list = [Consumer {
            id: 1,
            name: "ix".into(),
            cleared: 5,
            lag: 4,
            mask: "all".into(),
            idle_seconds: 0.0,
            registered: 0,
        }];
        let s = summary(&v, Some(&list));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "weir 0.1.0, pid 42, up 1m 1s");
        assert_eq!(
            lines[3],
            "mounts:     mountinfo (fanotify unavailable: no\\npermission) (stopped); \
             30 mounts; 5 events"
        );
        assert_eq!(lines[4], "devices:    off");
        assert_eq!(lines[5], "fs:         off");
        assert_eq!(lines[6], "ship:       off");
        assert_eq!(
            lines[7],
            "log:        indexes 1-9 (durable to 8); 1 segments, 4096 bytes"
        );
        assert_eq!(lines[8], "consumers:  1");
        assert_eq!(lines[9], "  ix (id 1): cleared 5, lag 4, mask all");
        assert_eq!(
            lines[10],
            "restart:    checkpoint_used=true devices=none mounts=2 \
             not_used_reason=none previous_clean=none"
        );
        // Without the list, the count the status holds.
        assert!(summary(&v, None).contains("\nconsumers:  1\n"));
        // Durable waits show once there were some.
        let mut w = v.clone();
        w.log.durable_waits = Some(40);
        w.log.durable_sleeps = Some(3);
        w.log.durable_poll_shuts = Some(0);
        assert_eq!(
            summary(&w, None).lines().nth(7),
            Some(
                "log:        indexes 1-9 (durable to 8); 1 segments, 4096 bytes; \
                 40 durable waits (3 slept, polling shut 0 times)"
            )
        );
        w.log.durable_waits = Some(0);
        assert_eq!(summary(&w, None).lines().nth(7), Some(lines[7]));
        assert_eq!(
            summary(&Status::default(), None).lines().next(),
            Some("weir ?, pid ?, up ?")
        );
    }

    #[test]
    fn the_shipper_line_and_its_last_error() {
        let mut v = Status {
            ship: Some(ShipStatus {
                sink: Some("nats".into()),
                url: Some("nats://b:4222".into()),
                stream: Some("WEIR".into()),
                host: Some("db7".into()),
                state: Some("retrying".into()),
                shipped: Some(5100),
                acked_index: Some(5120),
                in_flight: Some(0),
                lag: Some(3),
                batches: Some(9),
                retries: Some(1),
                gap_records: Some(0),
                last_error: Some("cannot connect\nto NATS".into()),
            }),
            ..Status::default()
        };
        let s = summary(&v, None);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[6],
            "ship:       nats nats://b:4222, stream WEIR, as db7; retrying; 5100 shipped, \
             broker at 5120, lag 3, 0 in flight, 1 retries, 0 lost"
        );
        // The broker's words cannot break the line.
        assert_eq!(lines[7], "  last error: cannot connect\\nto NATS");
        assert!(lines[8].starts_with("log:"), "{}", lines[8]);
        // A daemon that says less shows less.
        v.ship = Some(ShipStatus::default());
        let s = summary(&v, None);
        assert_eq!(s.lines().nth(6), Some("ship:       ? ?, stream ?, as ?; ?"));
        assert!(s.lines().nth(7).unwrap().starts_with("log:"));
        v.ship = Some(ShipStatus {
            sink: Some("kafka".into()),
            url: Some("k1:9092".into()),
            stream: Some("weir".into()),
            ..ShipStatus::default()
        });
        let s = summary(&v, None);
        assert_eq!(
            s.lines().nth(6),
            Some("ship:       kafka k1:9092, topic weir, as ?; ?")
        );
    }

    #[test]
    fn a_line_per_watched_root() {
        let root = |path: &[u8], fstype: &str| FsRootStatus {
            path: crate::bytes::ByteBuf(path.to_vec()),
            fstype: Some(fstype.into()),
            mark: Some("filesystem".into()),
            entries: Some(120),
            dirs: Some(14),
            events: Some(12),
            records: Some(10),
            verified: Some(1),
            compares: Some(0),
            ..FsRootStatus::default()
        };
        let v = Status {
            fs: Some(FsStatus {
                running: Some(true),
                events: Some(40),
                records: Some(38),
                overflows: Some(0),
                syncs: Some(2),
                backlog: Some(0),
                roots: vec![root(b"/srv", "ext4"), root(b"/x\n\xff", "tmpfs")],
                ..FsStatus::default()
            }),
            ..Status::default()
        };
        let s = summary(&v, None);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[5],
            "fs:         2 roots; 40 events, 38 records, 0 overflows, 2 syncs, 0 queued"
        );
        assert_eq!(
            lines[6],
            "  /srv: ext4, filesystem mark; 120 entries, 14 dirs; \
             12 events, 10 records, 1 verified, 0 compares"
        );
        // The path cannot break the line.
        assert!(
            lines[7].starts_with("  /x\\x0a\\xff: tmpfs, filesystem mark; "),
            "{}",
            lines[7]
        );
        assert_eq!(lines[8], "ship:       off");
        assert!(lines[9].starts_with("log:"), "{}", lines[9]);
        let mut reading = v.clone();
        if let Some(f) = &mut reading.fs {
            f.roots[0].state = Some("reading".into());
        }
        assert!(
            summary(&reading, None).lines().nth(6).is_some_and(
                |l| l.starts_with("  /srv: ext4, filesystem mark, reading; 120 entries")
            ),
            "{}",
            summary(&reading, None)
        );
        if let Some(f) = &mut reading.fs {
            f.roots[0].progress = Some(crate::status::FsProgress {
                phase: Some("loading".into()),
                unit: Some("entries".into()),
                done: Some(50),
                total: Some(200),
            });
        }
        assert!(
            summary(&reading, None).lines().nth(6).is_some_and(|l| l.starts_with(
                "  /srv: ext4, filesystem mark, reading, loading 50 of 200 entries (25%); 120 entries"
            )),
            "{}",
            summary(&reading, None)
        );
        let mut stopped = v.clone();
        if let Some(f) = &mut stopped.fs {
            f.running = Some(false);
            f.roots.clear();
        }
        assert_eq!(
            summary(&stopped, None).lines().nth(5),
            Some(
                "fs:         0 roots (stopped); 40 events, 38 records, 0 overflows, 2 syncs, \
                 0 queued"
            )
        );
    }
}
