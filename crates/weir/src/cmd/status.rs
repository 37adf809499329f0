//! `weir status`: what the daemon says of itself (`GET /v1/status`), as a
//! short summary for people or, with `--json`, the daemon's object.
//!
//! Without a daemon it says so and exits 3, as `systemctl status` does for
//! a unit that is not running, so scripts can tell "not running" from a
//! failure (1).
//!
//! The summary reads the object tolerantly: a figure the daemon does not
//! report shows as `?` rather than failing the command.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::daemon::{Route, print_json_line};

/// No daemon answers on the socket: `weir status` exits 3 for it.
#[derive(Debug)]
pub(crate) struct NoDaemon {
    socket: PathBuf,
}

impl std::fmt::Display for NoDaemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no daemon answers on {}", self.socket.display())
    }
}

impl std::error::Error for NoDaemon {}

pub(super) fn status(route: &Route, json: bool) -> Result<()> {
    if route.direct() {
        bail!("weir status reports on the daemon; it has no --direct form");
    }
    let Some(mut client) = route.client()? else {
        return Err(NoDaemon {
            socket: route.socket().to_owned(),
        }
        .into());
    };
    let v: Value = client
        .get_json("/v1/status")
        .context("asking the daemon for its status")?;
    if json {
        return print_json_line(&v);
    }
    // The status counts consumers; their cursors are a second question,
    // and only a detail: without an answer the count stays.
    let consumers = match client.get_json::<Vec<Value>>("/v1/log/consumers") {
        Ok(list) => Some(list),
        Err(e) => {
            tracing::debug!(error = %e, "no consumer list");
            None
        }
    };
    let mut out = crate::stdout::lock();
    out.write_all(summary(&v, consumers.as_deref()).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The human summary of a status object and, if known, the consumers.
fn summary(v: &Value, consumers: Option<&[Value]>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "weir {}, pid {}, up {}",
        text(&v["version"]),
        text(&v["pid"]),
        v["uptime_seconds"]
            .as_f64()
            .map_or_else(|| "?".to_owned(), duration)
    );
    let _ = writeln!(s, "state dir:  {}", text(&v["state_dir"]));
    let _ = writeln!(s, "socket:     {}", text(&v["socket"]));
    let _ = writeln!(s, "mounts:     {}", mounts(&v["mounts"]));
    let _ = writeln!(s, "devices:    {}", devices(&v["devices"]));
    let _ = writeln!(s, "log:        {}", log(&v["log"]));
    match consumers {
        Some(list) => {
            let _ = writeln!(s, "consumers:  {}", list.len());
            for c in list {
                let _ = writeln!(
                    s,
                    "  {} (id {}): cleared {}, lag {}, mask {}",
                    text(&c["name"]),
                    text(&c["id"]),
                    text(&c["cleared"]),
                    text(&c["lag"]),
                    text(&c["mask"])
                );
            }
        }
        None => {
            let count = match &v["log"]["consumers"] {
                Value::Array(a) => a.len().to_string(),
                other => text(other),
            };
            let _ = writeln!(s, "consumers:  {count}");
        }
    }
    if !v["reconcile"].is_null() {
        let _ = writeln!(s, "restart:    {}", flat(&v["reconcile"]));
    }
    s
}

/// A source's state: `off` when the daemon does not run it, a note when it
/// stopped.
fn source_head(o: &Value, head: String) -> Option<String> {
    if o.is_null() {
        return None;
    }
    Some(match o["running"] {
        Value::Bool(false) => format!("{head} (stopped)"),
        _ => head,
    })
}

fn mounts(m: &Value) -> String {
    let fallback = match m["fallback_reason"].as_str() {
        Some(why) => format!(" (fanotify unavailable: {})", printable(why)),
        None => String::new(),
    };
    let Some(head) = source_head(m, format!("{}{fallback}", text(&m["backend"]))) else {
        return "off".to_owned();
    };
    groups(&[
        head,
        figures(m, &[("count", "mounts")]),
        figures(
            m,
            &[
                ("events", "events"),
                ("overflows", "overflows"),
                ("readings", "readings"),
                ("changes", "changes"),
                ("reconciled", "reconciled"),
            ],
        ),
    ])
}

fn devices(d: &Value) -> String {
    let Some(head) = source_head(d, format!("{} uevents", text(&d["uevents"]))) else {
        return "off".to_owned();
    };
    groups(&[
        head,
        figures(d, &[("devices", "devices"), ("pvs", "PVs"), ("vgs", "VGs")]),
        figures(
            d,
            &[
                ("uevents_seen", "uevents seen"),
                ("changes", "changes"),
                ("reconciled", "reconciled"),
            ],
        ),
    ])
}

fn log(l: &Value) -> String {
    let mut indexes = format!(
        "indexes {}-{}",
        text(&l["first_index"]),
        text(&l["last_index"])
    );
    if !l["durable_index"].is_null() {
        let _ = write!(indexes, " (durable to {})", text(&l["durable_index"]));
    }
    groups(&[
        indexes,
        figures(l, &[("segments", "segments"), ("bytes", "bytes")]),
        durable_waits(l),
    ])
}

/// `N durable waits (M slept, polling shut K times)`, once there were some:
/// how many durable waiters polled for their record rather than slept, and
/// whether polling was shut (see `weir_log::Stats::durable_sleeps`).
fn durable_waits(l: &Value) -> String {
    match l["durable_waits"].as_u64() {
        Some(n) if n > 0 => format!(
            "{n} durable waits ({} slept, polling shut {} times)",
            text(&l["durable_sleeps"]),
            text(&l["durable_poll_shuts"])
        ),
        _ => String::new(),
    }
}

/// `N label` for each key the object has, comma-separated.
fn figures(o: &Value, items: &[(&str, &str)]) -> String {
    items
        .iter()
        .filter(|(k, _)| !o[*k].is_null())
        .map(|(k, label)| format!("{} {label}", text(&o[*k])))
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

/// A scalar as text: strings without quotes, `?` for what is missing.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "?".to_owned(),
        Value::String(s) => printable(s),
        other => other.to_string(),
    }
}

/// An object as `key=value` pairs, nested keys joined by dots.
fn flat(v: &Value) -> String {
    let mut pairs = Vec::new();
    flatten("", v, &mut pairs);
    pairs.join(" ")
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    printable(k)
                } else {
                    format!("{prefix}.{}", printable(k))
                };
                flatten(&key, v, out);
            }
        }
        Value::Null => out.push(format!("{prefix}=none")),
        other => out.push(format!("{prefix}={}", text(other))),
    }
}

/// The daemon's words with control characters escaped, so that they
/// cannot forge lines or move the cursor on the terminal.
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
    use serde_json::json;

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
        let v = json!({
            "version": "0.1.0", "pid": 42, "uptime_seconds": 61.5,
            "state_dir": "/var/lib/weir", "socket": "/run/weir/weir.sock",
            "mounts": {"backend": "mountinfo", "fallback_reason": "no\npermission", "count": 30,
                       "events": 5, "running": false},
            "devices": null,
            "log": {"first_index": 1, "last_index": 9, "durable_index": 8, "segments": 1,
                    "bytes": 4096, "consumers": 1},
            "reconcile": {"checkpoint": true, "mounts": {"reconciled": 2}, "why": null}
        });
        let list = [json!({"id": 1, "name": "ix", "cleared": 5, "lag": 4, "mask": "all"})];
        let s = summary(&v, Some(&list));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "weir 0.1.0, pid 42, up 1m 1s");
        assert_eq!(
            lines[3],
            "mounts:     mountinfo (fanotify unavailable: no\\npermission) (stopped); \
             30 mounts; 5 events"
        );
        assert_eq!(lines[4], "devices:    off");
        assert_eq!(
            lines[5],
            "log:        indexes 1-9 (durable to 8); 1 segments, 4096 bytes"
        );
        assert_eq!(lines[6], "consumers:  1");
        assert_eq!(lines[7], "  ix (id 1): cleared 5, lag 4, mask all");
        assert_eq!(
            lines[8],
            "restart:    checkpoint=true mounts.reconciled=2 why=none"
        );
        // Without the list, the count the status holds.
        assert!(summary(&v, None).contains("\nconsumers:  1\n"));
        // Durable waits show once there were some.
        let mut w = v.clone();
        w["log"]["durable_waits"] = json!(40);
        w["log"]["durable_sleeps"] = json!(3);
        w["log"]["durable_poll_shuts"] = json!(0);
        assert_eq!(
            summary(&w, None).lines().nth(5),
            Some(
                "log:        indexes 1-9 (durable to 8); 1 segments, 4096 bytes; \
                 40 durable waits (3 slept, polling shut 0 times)"
            )
        );
        w["log"]["durable_waits"] = json!(0);
        assert_eq!(summary(&w, None).lines().nth(5), Some(lines[5]));
        assert_eq!(
            summary(&json!({}), None).lines().next(),
            Some("weir ?, pid ?, up ?")
        );
    }
}
