//! `GET /v1/status` (what runs, with which backends, and its counters:
//! weir-view's [`Status`], which `weir status` reads back; the watched
//! trees in its `fs` section, which `GET /v1/fs` lists) and
//! `GET /v1/log/stats` (weir-view's [`LogStats`], the object
//! `weir log stats --json` prints).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use weir_view::chain::error_chain;
use weir_view::consumer::Consumer;
use weir_view::log_stats::{LogRetention, LogStats};
use weir_view::status::{ApiStatus, DevicesStatus, FsStatus, LogStatus, MountsStatus, Status};
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
        Some(t) => Some(
            tokio::task::spawn_blocking(move || devices(&t))
                .await
                .map_err(|e| ApiError::join(&e))?,
        ),
        None => None,
    };
    let info = &st.info;
    let uptime_ns = now_ns().saturating_sub(info.started_ns);
    let status = Status {
        version: Some(info.version.clone()),
        pid: Some(info.pid),
        started: Some(rfc3339_ns(info.started_ns)),
        started_ns: Some(info.started_ns),
        uptime_seconds: Some(uptime_ns as f64 / 1e9),
        state_dir: Some(info.state_dir.display().to_string()),
        socket: Some(info.socket.display().to_string()),
        config: info.config.as_ref().map(|p| p.display().to_string()),
        mounts: st.mounts.as_deref().map(mounts),
        devices,
        fs: st.fs.as_deref().map(fs),
        ship: st.ship.as_ref().map(|h| h.status(st.log.durable_index())),
        log: log(&st.log),
        reconcile: Some(st.reconcile.clone()),
        api: ApiStatus {
            followers: Some(ctx.followers.load(std::sync::atomic::Ordering::Relaxed) as u64),
            max_followers: Some(st.limits.max_followers as u64),
            max_body_bytes: Some(st.limits.max_body_bytes as u64),
            public_read: Some(st.access.public_read),
            group: st.access.group.as_ref().map(|(name, _)| name.clone()),
        },
    };
    Ok(json_response(StatusCode::OK, status.to_json()))
}

fn mounts(t: &weir_mounts::Tracker) -> MountsStatus {
    let s = t.stats();
    MountsStatus {
        backend: Some(t.backend().to_string()),
        fallback_reason: t.fallback_reason().map(|e| error_chain(e)),
        running: Some(!t.is_finished()),
        count: Some(t.len() as u64),
        events: Some(s.events),
        event_reads: Some(s.event_reads),
        wakeups: Some(s.wakeups),
        overflows: Some(s.overflows),
        readings: Some(s.readings),
        changes: Some(s.changes),
        cpu_seconds: Some(s.cpu_ns as f64 / 1e9),
        reading_cpu_seconds: Some(s.reading_cpu_ns as f64 / 1e9),
        reconciled: Some(s.reconciled),
        generation: Some(t.generation()),
    }
}

fn devices(t: &weir_devices::Tracker) -> DevicesStatus {
    let s = t.stats();
    let g = t.groups();
    let uevents = match (g.kernel, g.udev) {
        (true, true) => "kernel+udev",
        (false, true) => "udev",
        _ => "kernel",
    };
    let (devices, pvs, vgs, counters, texts) = t.with_inventory(|inv| {
        (
            inv.devices().count(),
            inv.pv_count(),
            inv.vgs().len(),
            inv.counters(),
            inv.text_stats(),
        )
    });
    DevicesStatus {
        uevents: Some(uevents.to_owned()),
        running: Some(!t.is_finished()),
        devices: Some(devices as u64),
        pvs: Some(pvs as u64),
        vgs: Some(vgs as u64),
        uevents_seen: Some(s.messages),
        uevents_refused: Some(s.refused),
        uevents_applied: Some(counters.uevents),
        overflows: Some(s.overflows),
        changes: Some(s.changes),
        activations: Some(s.activations),
        probes: Some(counters.probes),
        bytes_read: Some(counters.bytes_read),
        resyncs: Some(counters.resyncs),
        writes: Some(s.writes),
        write_overflows: Some(s.write_overflows),
        watched: Some(s.watched),
        unwatched: Some(s.unwatched),
        torn: Some(counters.torn),
        texts_read: Some(texts.texts_read),
        text_bytes_read: Some(texts.bytes_read),
        reconciled: Some(s.reconciled),
        generation: Some(t.generation()),
    }
}

/// The filesystem tracker's counters and roots, as `GET /v1/fs` lists them.
pub(crate) fn fs(t: &weir_fs::Tracker) -> FsStatus {
    FsStatus::new(!t.is_finished(), &t.stats(), &t.roots())
}

fn log(log: &weir_log::Log) -> LogStatus {
    let s = log.stats();
    LogStatus {
        dir: Some(log.dir().display().to_string()),
        first_index: Some(s.first_index),
        last_index: Some(s.last_index),
        durable_index: Some(s.durable_index),
        segments: Some(s.segments as u64),
        bytes: Some(s.bytes),
        spare_bytes: Some(s.spare_bytes),
        commits: Some(s.commits),
        syncs: Some(s.syncs),
        bytes_written: Some(s.bytes_written),
        write_errors: Some(s.write_errors),
        evictions: Some(s.evictions),
        ring_full_waits: Some(s.ring_full_waits),
        lifted: Some(s.lifted),
        spilled: Some(s.spilled),
        group_commit_waits: Some(s.group_commit_waits),
        group_commit_deadlines: Some(s.group_commit_deadlines),
        durable_waits: Some(s.durable_waits),
        durable_sleeps: Some(s.durable_sleeps),
        durable_poll_shuts: Some(s.durable_poll_shuts),
        consumers: Some(s.consumers as u64),
        committer_cpu_ns: s.committer_cpu_ns,
        poisoned: Some(log.is_poisoned()),
    }
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
    let stats = tokio::task::spawn_blocking(move || {
        let s = log.stats();
        LogStats {
            dir: log.dir().display().to_string(),
            incarnation: Some(log.incarnation().to_string()),
            segments: s.segments as u64,
            bytes: s.bytes,
            allocated_bytes: allocated(log.dir()),
            spare_bytes: s.spare_bytes,
            first_index: s.first_index,
            last_index: s.last_index,
            records: (s.last_index + 1).saturating_sub(s.first_index),
            consumers: log.consumer_list().iter().map(Consumer::from).collect(),
            poisoned: Some(log.is_poisoned()),
            retention: Some(LogRetention::from(log.retention())),
        }
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    Ok(json_response(
        StatusCode::OK,
        format!("{}\n", stats.to_json()),
    ))
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
