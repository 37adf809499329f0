//! The log's families: appends, indexes, commits, syncs, bytes, the commit
//! thread's CPU time, the commit and durable latency histograms, and each
//! consumer's lag.

use super::text::{Out, seconds};

/// The log's families.
pub(super) fn write(o: &mut Out, log: &weir_log::Log) {
    let s = log.stats();
    let one: [(&str, &str, &str, u64); 18] = [
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
            "weir_log_group_commit_waits_total",
            "counter",
            "fsyncs before which the committer waited for the durable writers the fsync before released.",
            s.group_commit_waits,
        ),
        (
            "weir_log_group_commit_deadlines_total",
            "counter",
            "Group-commit waits that ended at their deadline before every such writer was back.",
            s.group_commit_deadlines,
        ),
        (
            "weir_log_durable_waits_total",
            "counter",
            "Durable waits that found their record not yet durable.",
            s.durable_waits,
        ),
        (
            "weir_log_durable_sleeps_total",
            "counter",
            "Durable waits that slept until the committer woke them (the others polled).",
            s.durable_sleeps,
        ),
        (
            "weir_log_durable_poll_shuts_total",
            "counter",
            "Times polling durable waiters was shut for a second because they kept losing the CPU to other tasks.",
            s.durable_poll_shuts,
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
        (
            "weir_log_spare_bytes",
            "gauge",
            "Length of the spare segment file, zero-filled ahead of the next roll (counts towards the size limit).",
            s.spare_bytes,
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
    if let Some(ns) = s.committer_cpu_ns {
        o.one(
            "weir_log_committer_cpu_seconds_total",
            "counter",
            "CPU time the log's commit thread has used (it seals, writes and syncs every record).",
            seconds(ns),
        );
    }
    o.histogram(
        "weir_log_commit_seconds",
        "Time from a record's append to its write to the OS, when readers see it (records committed since the daemon started).",
        &s.commit_latency,
    );
    o.histogram(
        "weir_log_durable_seconds",
        "Time from a record's append to the fsync that made it durable (exact sum; counts spread evenly within each write batch).",
        &s.durable_latency,
    );
    let lag = "weir_consumer_lag";
    o.family(lag, "gauge", "Records a consumer has not cleared yet.");
    for c in log.consumer_list() {
        o.sample(lag, &[("consumer", &c.name)], c.lag);
    }
}
