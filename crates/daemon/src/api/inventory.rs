//! `GET /v1/mounts`, `/v1/devices`, `/v1/lvm/pvs`, `/v1/lvm/vgs`,
//! `/v1/lvm/lvs`: the trackers' tables in the very bytes `weir mounts`,
//! `weir devices`, `weir pvs`, `weir vgs` and `weir lvs` print (weir-view
//! renders both; the LVM listings through the one function the CLI calls,
//! `lvm_view::render`, the devices through `devices_view::render`).
//!
//! A rendering is cached by tracker generation ([`super::cache`]), but
//! the devices' and a mounts table with df columns (whose figures change
//! while the table stands still) or UUID and LABEL (the device tracker's),
//! and made on a blocking thread when it
//! is not cached, so a large table never stalls the server's threads.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use weir_devices::sysfs::Detail;
use weir_devices::{Filter, Inventory, Sysfs};
use weir_view::devices_view;
use weir_view::lvm_view::{self, Listing as View};
use weir_view::mounts_table::{Facts, Source};
use weir_view::{mounts_json, mounts_table};

use super::cache::{Key, Listing, Lvm};
use super::context::Ctx;
use super::error::{ApiError, Code};
use super::query::{DevicesQuery, Format, LvmQuery, MountsQuery, QueryError};
use super::state::ApiState;

/// A query error as a 400.
pub(crate) fn bad_query(e: QueryError) -> ApiError {
    ApiError::new(Code::BadRequest, e.to_string())
}

/// A 200 with a rendered body.
fn answer(format: Format, body: Bytes) -> Response {
    let kind = match format {
        Format::Json => "application/json",
        Format::Text => "text/plain; charset=utf-8",
    };
    ([(CONTENT_TYPE, kind)], body).into_response()
}

fn unavailable(what: &str, stopped: bool) -> ApiError {
    let why = if stopped {
        "has stopped"
    } else {
        "is not running"
    };
    ApiError::new(
        Code::Unavailable,
        format!("the {what} tracker {why} in this daemon"),
    )
}

impl ApiState {
    /// The mount tracker, or why the mount listings cannot be answered.
    fn running_mounts(&self) -> Result<Arc<weir_mounts::Tracker>, ApiError> {
        running(self.mounts.as_ref(), "mount", |t| t.is_finished())
    }

    /// The device tracker, or why the device and LVM listings cannot be
    /// answered.
    fn running_devices(&self) -> Result<Arc<weir_devices::Tracker>, ApiError> {
        running(self.devices.as_ref(), "device", |t| t.is_finished())
    }
}

/// A tracker that runs: one this daemon started and that has not stopped.
fn running<T>(
    tracker: Option<&Arc<T>>,
    what: &str,
    finished: impl FnOnce(&T) -> bool,
) -> Result<Arc<T>, ApiError> {
    let tracker = tracker.ok_or_else(|| unavailable(what, false))?;
    if finished(tracker) {
        return Err(unavailable(what, true));
    }
    Ok(Arc::clone(tracker))
}

/// The query's format as weir-view names it.
fn view_format(format: Format) -> lvm_view::Format {
    match format {
        Format::Json => lvm_view::Format::Json,
        Format::Text => lvm_view::Format::Text,
    }
}

/// `GET /v1/mounts`.
pub(crate) async fn mounts(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = MountsQuery::parse(q.as_deref()).map_err(bad_query)?;
    let tracker = ctx.state.running_mounts()?;
    let key = Key {
        listing: Listing::Mounts,
        format: q.format,
        columns: match q.format {
            Format::Json => Vec::new(),
            Format::Text => {
                let s = q.style;
                let mut k: Vec<u8> = q.columns.0.iter().map(|&c| c as u8).collect();
                // The style after the columns, in a byte no column has.
                k.push(0x80 | u8::from(s.tree) | u8::from(s.ascii) << 1 | u8::from(s.bytes) << 2);
                k
            }
        },
        units: None,
    };
    // statvfs figures change while the table stands still, and the
    // filesystems' ids belong to the device tracker: those are read afresh.
    let fresh = q.format == Format::Text
        && (q.columns.needs(Source::Usage) || q.columns.needs(Source::Device));
    let devices = ctx.state.devices.clone();
    if !fresh && let Some(b) = ctx.cache.get(&key, tracker.generation()) {
        return Ok(answer(q.format, b));
    }
    let format = q.format;
    let body = tokio::task::spawn_blocking(move || {
        // The generation first, then the table: see `cache`.
        let generation = tracker.generation();
        let mounts = tracker.mounts();
        let text = match format {
            Format::Json => mounts_json::mounts_json(&mounts),
            Format::Text => {
                let facts = Facts::gather(&q.columns, &mounts, || match &devices {
                    Some(t) if !t.is_finished() => {
                        t.with_inventory(|inv| Facts::filesystems(&mounts, inv))
                    }
                    // No device tracker: read the devices, as the CLI does.
                    _ => {
                        Inventory::scan_with(Sysfs::default(), Filter::accept_all(), Detail::Probe)
                            .map(|(inv, _)| Facts::filesystems(&mounts, &inv))
                            .unwrap_or_default()
                    }
                });
                mounts_table::render(&q.columns, &mounts, &facts, q.style)
            }
        };
        let body = Bytes::from(text);
        if !fresh {
            ctx.cache.put(key, generation, body.clone());
        }
        body
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    Ok(answer(format, body))
}

/// `GET /v1/devices`: rendered by `devices_view::render`, the function
/// `weir devices` calls, from the device tracker's inventory and the mount
/// tracker's table (a fresh read of /proc/self/mountinfo when this daemon
/// tracks no mounts, as the CLI reads it). It depends on two trackers, so
/// it is rendered anew each time rather than cached by one generation.
pub(crate) async fn devices(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = DevicesQuery::parse(q.as_deref()).map_err(bad_query)?;
    let tracker = ctx.state.running_devices()?;
    let mounts = ctx.state.mounts.clone();
    let format = q.format;
    let view_format = view_format(format);
    let body = tokio::task::spawn_blocking(move || {
        let table = match &mounts {
            Some(t) if !t.is_finished() => t.mounts(),
            _ => weir_mounts::snapshot(weir_mounts::BackendChoice::Mountinfo)
                .map(|s| s.mounts)
                .unwrap_or_default(),
        };
        let text = tracker
            .with_inventory(|inv| devices_view::render(inv, &table, &q.options, view_format));
        Bytes::from(text)
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    Ok(answer(format, body))
}

/// `GET /v1/lvm/pvs`.
pub(crate) async fn pvs(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    lvm(ctx, Lvm::Pvs, q).await
}

/// `GET /v1/lvm/vgs`.
pub(crate) async fn vgs(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    lvm(ctx, Lvm::Vgs, q).await
}

/// `GET /v1/lvm/lvs`.
pub(crate) async fn lvs(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    lvm(ctx, Lvm::Lvs, q).await
}

impl Lvm {
    /// The listing weir-view renders.
    fn view(self) -> View {
        match self {
            Lvm::Pvs => View::Pvs,
            Lvm::Vgs => View::Vgs,
            Lvm::Lvs => View::Lvs,
        }
    }
}

async fn lvm(ctx: Arc<Ctx>, what: Lvm, q: Option<String>) -> Result<Response, ApiError> {
    let q = LvmQuery::parse(what.view(), q.as_deref()).map_err(bad_query)?;
    let tracker = ctx.state.running_devices()?;
    let format = q.format;
    let key = Key {
        listing: Listing::Lvm(what),
        format,
        columns: match (format, &q.text.columns) {
            (Format::Text, Some(c)) => c.key().to_vec(),
            _ => Vec::new(),
        },
        units: (format == Format::Text).then_some(q.text.units),
    };
    if let Some(b) = ctx.cache.get(&key, tracker.generation()) {
        return Ok(answer(format, b));
    }
    let view_format = view_format(format);
    let body = tokio::task::spawn_blocking(move || {
        // The generation moves under the inventory's lock: read inside it,
        // it is exactly the rendered inventory's.
        let (generation, text) = tracker.with_inventory(|inv| {
            let text = lvm_view::render(inv, what.view(), view_format, &q.text);
            (tracker.generation(), text)
        });
        // The columns were parsed for this very listing.
        let text = text.map_err(|e| ApiError::new(Code::Internal, e.to_string()))?;
        let body = Bytes::from(text);
        ctx.cache.put(key, generation, body.clone());
        Ok::<_, ApiError>(body)
    })
    .await
    .map_err(|e| ApiError::join(&e))??;
    Ok(answer(format, body))
}
