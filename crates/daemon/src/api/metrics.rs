//! `GET /metrics`: the Prometheus text exposition (format 0.0.4), written
//! by hand since it is small: the log's counters and indexes, consumer
//! lag, the mount tracker's reading budget, events per source, and the
//! API's own request counts.
//!
//! Not here yet: a commit-latency histogram (`weir_log_commit_seconds`).
//! weir-log does not measure it, and the API cannot from outside without
//! decoding every record; the commit and sync counters stand in for now.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use super::context::Ctx;

/// Requests answered, by route pattern and status.
#[derive(Default)]
pub(crate) struct HttpCounters(Mutex<BTreeMap<(&'static str, u16), u64>>);

impl HttpCounters {
    /// Counts one answer.
    pub(crate) fn count(&self, route: &'static str, status: u16) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((route, status)).or_default() += 1;
    }

    fn snapshot(&self) -> Vec<((&'static str, u16), u64)> {
        let m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        m.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

/// The handler.
pub(crate) async fn metrics(State(ctx): State<Arc<Ctx>>) -> Response {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        render(&ctx),
    )
        .into_response()
}

/// One metric family: its HELP and TYPE lines, then its samples.
struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape_label(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }

    fn one(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }
}

/// A label value with `\`, `"` and newlines escaped, as the format asks.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn render(ctx: &Ctx) -> String {
    let mut o = Out(String::new());
    log_metrics(&mut o, &ctx.state.log);
    source_metrics(&mut o, ctx);
    o.one(
        "weir_api_followers",
        "gauge",
        "Open follow streams.",
        ctx.followers.load(std::sync::atomic::Ordering::Relaxed),
    );
    let name = "weir_http_requests_total";
    o.family(
        name,
        "counter",
        "API requests answered, by route and status.",
    );
    for ((route, status), n) in ctx.http.snapshot() {
        o.sample(
            name,
            &[("route", route), ("status", &status.to_string())],
            n,
        );
    }
    o.0
}

fn log_metrics(o: &mut Out, log: &weir_log::Log) {
    let s = log.stats();
    let one: [(&str, &str, &str, u64); 12] = [
        (
            "weir_log_appends_total",
            "counter",
            "Records appended and committed to the log (its last index).",
            s.last_index,
        ),
        (
            "weir_log_last_index",
            "gauge",
            "The last committed index.",
            s.last_index,
        ),
        (
            "weir_log_first_index",
            "gauge",
            "The oldest index still in the log.",
            s.first_index,
        ),
        (
            "weir_log_durable_index",
            "gauge",
            "The last index known to be fsynced.",
            s.durable_index,
        ),
        (
            "weir_log_commits_total",
            "counter",
            "Write batches handed to the OS.",
            s.commits,
        ),
        (
            "weir_log_syncs_total",
            "counter",
            "fsyncs of segment data.",
            s.syncs,
        ),
        (
            "weir_log_written_bytes_total",
            "counter",
            "Bytes handed to the OS.",
            s.bytes_written,
        ),
        (
            "weir_log_write_errors_total",
            "counter",
            "Failed write attempts (retried).",
            s.write_errors,
        ),
        (
            "weir_log_ring_full_waits_total",
            "counter",
            "Appends that waited for room in the ring.",
            s.ring_full_waits,
        ),
        (
            "weir_log_evictions_total",
            "counter",
            "Consumers evicted by retention.",
            s.evictions,
        ),
        (
            "weir_log_segments",
            "gauge",
            "Segment files.",
            s.segments as u64,
        ),
        (
            "weir_log_bytes",
            "gauge",
            "Total segment file length.",
            s.bytes,
        ),
    ];
    for (name, kind, help, v) in one {
        o.one(name, kind, help, v);
    }
    o.one(
        "weir_log_poisoned",
        "gauge",
        "1 when an fsync failure has poisoned the log.",
        u8::from(log.is_poisoned()),
    );
    let lag = "weir_consumer_lag";
    o.family(lag, "gauge", "Records a consumer has not cleared yet.");
    for c in log.consumer_list() {
        o.sample(lag, &[("consumer", &c.name)], c.lag);
    }
}

fn source_metrics(o: &mut Out, ctx: &Ctx) {
    let m = ctx.state.mounts.as_ref().map(|t| (t.stats(), t.len()));
    let d = ctx.state.devices.as_ref().map(|t| t.stats());
    // One family per counter, a sample per running source.
    let families: [(&str, &str, Option<u64>, Option<u64>); 4] = [
        (
            "weir_source_events_total",
            "Events read per source: fanotify events (mounts), uevent messages (devices).",
            m.map(|(s, _)| s.events),
            d.map(|s| s.messages),
        ),
        (
            "weir_source_changes_total",
            "Changes found and logged per source.",
            m.map(|(s, _)| s.changes),
            d.map(|s| s.changes),
        ),
        (
            "weir_source_overflows_total",
            "Lost events per source (each followed by a whole re-read).",
            m.map(|(s, _)| s.overflows),
            d.map(|s| s.overflows),
        ),
        (
            "weir_source_reconciled_total",
            "Changes logged as reconciled at start, per source.",
            m.map(|(s, _)| s.reconciled),
            d.map(|s| s.reconciled),
        ),
    ];
    for (name, help, mounts, devices) in families {
        o.family(name, "counter", help);
        for (source, v) in [("mounts", mounts), ("devices", devices)] {
            if let Some(v) = v {
                o.sample(name, &[("source", source)], v);
            }
        }
    }
    if let Some((s, count)) = m {
        o.one("weir_mounts", "gauge", "Mounts in the table.", count);
        o.one(
            "weir_mounts_budget_readings_total",
            "counter",
            "Whole-table readings and comparisons (held to the CPU budget).",
            s.readings,
        );
        o.one(
            "weir_mounts_budget_reading_cpu_seconds_total",
            "counter",
            "CPU time spent in whole-table readings.",
            seconds(s.reading_cpu_ns),
        );
        o.one(
            "weir_mounts_cpu_seconds_total",
            "counter",
            "CPU time of the mount tracker's thread.",
            seconds(s.cpu_ns),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_and_escapes() {
        let mut o = Out(String::new());
        o.family("x_total", "counter", "X.");
        o.sample("x_total", &[("a", "q\"\\\n"), ("b", "2")], 7);
        assert_eq!(
            o.0,
            "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"q\\\"\\\\\\n\",b=\"2\"} 7\n"
        );
    }
}
