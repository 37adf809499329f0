//! The sources' families: events, changes, overflows and reconciled
//! changes per source, the mount tracker's table size, CPU time and
//! reading budget, the device tracker's watches on device nodes, and the
//! filesystem tracker's counters and roots (`weir_fs_*`, a sample per root
//! labelled with its path).

use weir_view::bytes::escape;
use weir_view::status::{FsRootStatus, FsStatus};

use super::Ctx;
use super::text::{Out, seconds};

/// The sources' families.
pub(super) fn write(o: &mut Out, ctx: &Ctx) {
    let m = ctx.state.mounts.as_ref().map(|t| (t.stats(), t.len()));
    let d = ctx.state.devices.as_ref().map(|t| t.stats());
    let f = ctx.state.fs.as_deref().map(super::super::status::fs);
    // One family per counter, a sample per running source. The filesystem
    // tracker logs what it reconciles at start with the rest of its
    // records and counts it with them.
    let families: [(&str, &str, [Option<u64>; 3]); 4] = [
        (
            "weir_source_events_total",
            "Events read per source: fanotify events (mounts, fs), uevent messages (devices).",
            [
                m.map(|(s, _)| s.events),
                d.map(|s| s.messages),
                f.as_ref().and_then(|f| f.events),
            ],
        ),
        (
            "weir_source_changes_total",
            "Changes found and logged per source.",
            [
                m.map(|(s, _)| s.changes),
                d.map(|s| s.changes),
                f.as_ref().and_then(|f| f.records),
            ],
        ),
        (
            "weir_source_overflows_total",
            "Lost events per source (each followed by a whole re-read).",
            [
                m.map(|(s, _)| s.overflows),
                d.map(|s| s.overflows),
                f.as_ref().and_then(|f| f.overflows),
            ],
        ),
        (
            "weir_source_reconciled_total",
            "Changes logged as reconciled at start, per source.",
            [m.map(|(s, _)| s.reconciled), d.map(|s| s.reconciled), None],
        ),
    ];
    for (name, help, values) in families {
        o.family(name, "counter", help);
        for (source, v) in ["mounts", "devices", "fs"].into_iter().zip(values) {
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
    if let Some(f) = &f {
        fs(o, f);
    }
}

/// One figure of a watched root.
type RootFigure = fn(&FsRootStatus) -> Option<u64>;

/// The filesystem tracker: its counters, then a sample per watched root,
/// labelled `root` with the root's path (its bytes shown as `weir fs`
/// shows them, escaped, so that every label value is UTF-8 and no two
/// paths share one).
fn fs(o: &mut Out, f: &FsStatus) {
    let zero = |v: Option<u64>| v.unwrap_or(0);
    o.one(
        "weir_fs_roots",
        "gauge",
        "Directory trees watched.",
        f.roots.len(),
    );
    for (name, help, v) in [
        (
            "weir_fs_reads_total",
            "Reads of the fanotify group that returned events.",
            f.reads,
        ),
        (
            "weir_fs_events_total",
            "Events read on the watched filesystems, inside the roots or not.",
            f.events,
        ),
        ("weir_fs_records_total", "Records logged.", f.records),
        (
            "weir_fs_overflows_total",
            "Queue overflows, each followed by a comparison of every root with a walk.",
            f.overflows,
        ),
        (
            "weir_fs_dropped_events_total",
            "Events dropped while a comparison was due.",
            f.dropped,
        ),
        (
            "weir_fs_syncs_total",
            "Barrier rounds (a cookie through every root).",
            f.syncs,
        ),
    ] {
        o.one(name, "counter", help, zero(v));
    }
    o.one(
        "weir_fs_backlog_events",
        "gauge",
        "Events the kernel has queued for the tracker, not yet read.",
        zero(f.backlog),
    );
    let per_root: [(&str, &str, &str, RootFigure); 9] = [
        (
            "weir_fs_root_events_total",
            "counter",
            "Events that concerned the root.",
            |r| r.events,
        ),
        (
            "weir_fs_root_records_total",
            "counter",
            "Records logged for the root.",
            |r| r.records,
        ),
        (
            "weir_fs_root_verified_total",
            "counter",
            "Records decided by a look at the live entry (VERIFIED).",
            |r| r.verified,
        ),
        (
            "weir_fs_root_compares_total",
            "counter",
            "Comparisons of the root with a walk.",
            |r| r.compares,
        ),
        (
            "weir_fs_root_outside_events_total",
            "counter",
            "Events about the rest of the root's filesystem, ignored.",
            |r| r.outside,
        ),
        (
            "weir_fs_root_entries",
            "gauge",
            "Entries in the root's tree, the root not counted.",
            |r| r.entries,
        ),
        (
            "weir_fs_root_dirs",
            "gauge",
            "Directories in the root's tree, the root included.",
            |r| r.dirs,
        ),
        (
            "weir_fs_root_dirty_files",
            "gauge",
            "Files written and waiting for their MTIME record.",
            |r| r.dirty,
        ),
        (
            "weir_fs_root_reading",
            "gauge",
            "1 while the root's tree is first read (its changes wait in the queue).",
            |r| r.state.as_deref().map(|s| u64::from(s == "reading")),
        ),
    ];
    let labels: Vec<String> = f.roots.iter().map(|r| escape(&r.path.0)).collect();
    for (name, kind, help, value) in per_root {
        o.family(name, kind, help);
        for (r, root) in f.roots.iter().zip(&labels) {
            o.sample(name, &[("root", root)], zero(value(r)));
        }
    }
    // Long work under way, a sample per root at work, labelled with its
    // phase; a total only where it is known.
    let progress: [(&str, &str, ProgressFigure); 2] = [
        (
            "weir_fs_root_progress_done",
            "How much of a root's long work (first reading, reconciliation, rescan) is done, in the phase's unit.",
            |p| p.done,
        ),
        (
            "weir_fs_root_progress_total",
            "How much of that work there is, where known.",
            |p| p.total,
        ),
    ];
    for (name, help, value) in progress {
        o.family(name, "gauge", help);
        for (r, root) in f.roots.iter().zip(&labels) {
            let Some(p) = &r.progress else { continue };
            if let Some(v) = value(p) {
                let phase = p.phase.as_deref().unwrap_or("");
                let unit = p.unit.as_deref().unwrap_or("");
                o.sample(name, &[("root", root), ("phase", phase), ("unit", unit)], v);
            }
        }
    }
}

/// One figure of a root's progress.
type ProgressFigure = fn(&weir_view::status::FsProgress) -> Option<u64>;

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
