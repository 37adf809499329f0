//! `GET /v1/status` (what runs, with which backends, and its counters) and
//! `GET /v1/log/stats` (the object `weir log stats --json` prints).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};
use weir_view::chain::error_chain;
use weir_view::consumer::consumer_json;
use weir_view::time::rfc3339_ns;

use super::context::Ctx;
use super::error::{ApiError, json_response};
use super::inventory::bad_query;
use super::query::parse_empty;
use super::state::now_ns;

/// `GET /v1/status`.
pub(crate) async fn status(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let st = ctx.state.clone();
    // The device part takes the inventory's lock and counts VGs: off the
    // server's threads.
    let devices = match st.devices.clone() {
        Some(t) => tokio::task::spawn_blocking(move || devices(&t))
            .await
            .map_err(|e| ApiError::join(&e))?,
        None => Value::Null,
    };
    let info = &st.info;
    let uptime_ns = now_ns().saturating_sub(info.started_ns);
    let v = json!({
        "version": info.version,
        "pid": info.pid,
        "started": rfc3339_ns(info.started_ns),
        "started_ns": info.started_ns,
        "uptime_seconds": uptime_ns as f64 / 1e9,
        "state_dir": info.state_dir.display().to_string(),
        "socket": info.socket.display().to_string(),
        "config": info.config.as_ref().map(|p| p.display().to_string()),
        "mounts": st.mounts.as_deref().map_or(Value::Null, mounts),
        "devices": devices,
        "log": log(&st.log),
        "reconcile": st.reconcile,
        "api": {
            "followers": ctx.followers.load(std::sync::atomic::Ordering::Relaxed),
            "max_followers": st.limits.max_followers,
            "max_body_bytes": st.limits.max_body_bytes,
            "public_read": st.access.public_read,
            "group": st.access.group.as_ref().map(|(name, _)| name.clone()),
        },
    });
    Ok(json_response(StatusCode::OK, v.to_string()))
}

fn mounts(t: &weir_mounts::Tracker) -> Value {
    let s = t.stats();
    json!({
        "backend": t.backend().to_string(),
        "fallback_reason": t.fallback_reason().map(|e| error_chain(e)),
        "running": !t.is_finished(),
        "count": t.len(),
        "events": s.events,
        "event_reads": s.event_reads,
        "wakeups": s.wakeups,
        "overflows": s.overflows,
        "readings": s.readings,
        "changes": s.changes,
        "cpu_seconds": s.cpu_ns as f64 / 1e9,
        "reading_cpu_seconds": s.reading_cpu_ns as f64 / 1e9,
        "reconciled": s.reconciled,
        "generation": t.generation(),
    })
}

fn devices(t: &weir_devices::Tracker) -> Value {
    let s = t.stats();
    let g = t.groups();
    let uevents = match (g.kernel, g.udev) {
        (true, true) => "kernel+udev",
        (false, true) => "udev",
        _ => "kernel",
    };
    let (count, pvs, vgs, counters, texts) = t.with_inventory(|inv| {
        (
            inv.devices().count(),
            inv.pv_count(),
            inv.vgs().len(),
            inv.counters(),
            inv.text_stats(),
        )
    });
    json!({
        "uevents": uevents,
        "running": !t.is_finished(),
        "devices": count,
        "pvs": pvs,
        "vgs": vgs,
        "uevents_seen": s.messages,
        "uevents_refused": s.refused,
        "uevents_applied": counters.uevents,
        "overflows": s.overflows,
        "changes": s.changes,
        "activations": s.activations,
        "probes": counters.probes,
        "bytes_read": counters.bytes_read,
        "resyncs": counters.resyncs,
        "writes": s.writes,
        "write_overflows": s.write_overflows,
        "watched": s.watched,
        "unwatched": s.unwatched,
        "torn": counters.torn,
        "texts_read": texts.texts_read,
        "text_bytes_read": texts.bytes_read,
        "reconciled": s.reconciled,
        "generation": t.generation(),
    })
}

fn log(log: &weir_log::Log) -> Value {
    let s = log.stats();
    json!({
        "dir": log.dir().display().to_string(),
        "first_index": s.first_index,
        "last_index": s.last_index,
        "durable_index": s.durable_index,
        "segments": s.segments,
        "bytes": s.bytes,
        "spare_bytes": s.spare_bytes,
        "commits": s.commits,
        "syncs": s.syncs,
        "bytes_written": s.bytes_written,
        "write_errors": s.write_errors,
        "evictions": s.evictions,
        "ring_full_waits": s.ring_full_waits,
        "lifted": s.lifted,
        "spilled": s.spilled,
        "group_commit_waits": s.group_commit_waits,
        "group_commit_deadlines": s.group_commit_deadlines,
        "durable_waits": s.durable_waits,
        "durable_sleeps": s.durable_sleeps,
        "durable_poll_shuts": s.durable_poll_shuts,
        "consumers": s.consumers,
        "committer_cpu_ns": s.committer_cpu_ns,
        "poisoned": log.is_poisoned(),
    })
}

/// `GET /v1/log/stats`: what `weir log stats --json` prints, from the
/// running log (the bytes allocated on disk are read from the segment
/// files, on a blocking thread).
pub(crate) async fn log_stats(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let log = ctx.state.log.clone();
    let v = tokio::task::spawn_blocking(move || {
        let s = log.stats();
        let consumers: Vec<Value> = log.consumer_list().iter().map(consumer_json).collect();
        json!({
            "dir": log.dir().display().to_string(),
            "segments": s.segments,
            "bytes": s.bytes,
            "allocated_bytes": allocated(log.dir()),
            "spare_bytes": s.spare_bytes,
            "first_index": s.first_index,
            "last_index": s.last_index,
            "records": (s.last_index + 1).saturating_sub(s.first_index),
            "consumers": consumers,
            "poisoned": log.is_poisoned(),
        })
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    Ok(json_response(StatusCode::OK, format!("{v}\n")))
}

/// Bytes allocated on disk for the segments (`st_blocks * 512`), as
/// `weir_log::inspect` counts them. A segment collected meanwhile is
/// skipped; an unreadable directory counts 0.
fn allocated(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| weir_log::segment::parse_segment_name(&e.path()).is_some())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum()
}
