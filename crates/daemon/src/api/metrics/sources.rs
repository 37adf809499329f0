//! The sources' families: events, changes, overflows and reconciled
//! changes per source, the mount tracker's table size, CPU time and
//! reading budget, and the device tracker's watches on device nodes.

use super::Ctx;
use super::text::{Out, seconds};

/// The sources' families.
pub(super) fn write(o: &mut Out, ctx: &Ctx) {
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
        budget(o, &s);
    }
    if let Some(s) = d {
        writes(o, &s);
    }
}

/// LVM metadata writes on attached devices: seen by inotify on the device
/// nodes, or by polling the devices past the watch limit.
fn writes(o: &mut Out, s: &weir_devices::TrackerStats) {
    o.one(
        "weir_devices_writes_total",
        "counter",
        "Devices probed because LVM closed them after writing, or polled for lack of a watch.",
        s.writes,
    );
    o.one(
        "weir_devices_write_overflows_total",
        "counter",
        "Times inotify dropped write events (every watched device was probed again).",
        s.write_overflows,
    );
    o.one(
        "weir_devices_watched",
        "gauge",
        "Devices LVM would read that are watched for writes.",
        s.watched,
    );
    o.one(
        "weir_devices_unwatched",
        "gauge",
        "Devices LVM would read that are polled each second instead (the inotify watch limit).",
        s.unwatched,
    );
}

/// The reading budget's state: a token bucket of CPU time (see
/// `weir_mounts::TrackerOptions::budget`).
fn budget(o: &mut Out, s: &weir_mounts::TrackerStats) {
    o.one(
        "weir_mounts_budget_tokens_seconds",
        "gauge",
        "CPU time whole-table readings may spend now; negative while they have overspent, and readings wait until it is back to zero.",
        s.budget_tokens_ns as f64 / 1e9,
    );
    o.one(
        "weir_mounts_budget_capacity_seconds",
        "gauge",
        "The most CPU time the reading budget holds.",
        seconds(s.budget_capacity_ns),
    );
    o.one(
        "weir_mounts_budget_throttled",
        "gauge",
        "1 while a wanted whole-table reading is held back by the budget.",
        u8::from(s.budget_throttled),
    );
    o.one(
        "weir_mounts_readings_deferred_total",
        "counter",
        "Whole-table readings the budget held back (each once, however long it waited).",
        s.budget_deferred,
    );
}
