//! `GET /v1/mounts`, `/v1/devices`, `/v1/lvm/pvs`, `/v1/lvm/vgs`: the
//! trackers' tables in the very bytes `weir mounts`, `weir devices`,
//! `weir pvs` and `weir vgs` print (weir-view renders both).
//!
//! A rendering is cached by tracker generation ([`super::cache`]) and made
//! on a blocking thread when it is not cached, so a large table never
//! stalls the server's threads.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use weir_devices::{DevNum, Inventory};
use weir_view::{lvm_json, lvm_table, mounts_json, mounts_table};

use super::cache::{Key, Listing, Lvm};
use super::context::Ctx;
use super::error::{ApiError, Code};
use super::query::{Format, FormatQuery, MountsQuery, QueryError};

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

/// `GET /v1/mounts`.
pub(crate) async fn mounts(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = MountsQuery::parse(q.as_deref()).map_err(bad_query)?;
    let tracker = ctx
        .state
        .mounts
        .clone()
        .ok_or_else(|| unavailable("mount", false))?;
    if tracker.is_finished() {
        return Err(unavailable("mount", true));
    }
    let key = Key {
        listing: Listing::Mounts,
        format: q.format,
        columns: match q.format {
            Format::Json => Vec::new(),
            Format::Text => q.columns.0.iter().map(|&c| c as u8).collect(),
        },
    };
    if let Some(b) = ctx.cache.get(&key, tracker.generation()) {
        return Ok(answer(q.format, b));
    }
    let format = q.format;
    let body = tokio::task::spawn_blocking(move || {
        // The generation first, then the table: see `cache`.
        let generation = tracker.generation();
        let mounts = tracker.mounts();
        let text = match format {
            Format::Json => mounts_json::mounts_json(&mounts),
            Format::Text => mounts_table::render(&q.columns, &mounts),
        };
        let body = Bytes::from(text);
        ctx.cache.put(key, generation, body.clone());
        body
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    Ok(answer(format, body))
}

/// `GET /v1/devices`.
pub(crate) async fn devices(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    lvm(ctx, Lvm::Devices, q).await
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

async fn lvm(ctx: Arc<Ctx>, what: Lvm, q: Option<String>) -> Result<Response, ApiError> {
    let q = FormatQuery::parse(q.as_deref()).map_err(bad_query)?;
    let tracker = ctx
        .state
        .devices
        .clone()
        .ok_or_else(|| unavailable("device", false))?;
    if tracker.is_finished() {
        return Err(unavailable("device", true));
    }
    let format = q.format;
    let key = Key {
        listing: Listing::Lvm(what),
        format,
        columns: Vec::new(),
    };
    if let Some(b) = ctx.cache.get(&key, tracker.generation()) {
        return Ok(answer(format, b));
    }
    let body = tokio::task::spawn_blocking(move || {
        // The generation moves under the inventory's lock: read inside it,
        // it is exactly the rendered inventory's.
        let (generation, text) =
            tracker.with_inventory(|inv| (tracker.generation(), render_lvm(inv, what, format)));
        let body = Bytes::from(text);
        ctx.cache.put(key, generation, body.clone());
        body
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    Ok(answer(format, body))
}

/// What `weir devices|pvs|vgs [--json]` prints for this inventory.
fn render_lvm(inv: &Inventory, what: Lvm, format: Format) -> String {
    let path = |dn: DevNum| {
        inv.get(dn).map_or_else(
            || dn.to_string(),
            |e| e.device.dev_path().display().to_string(),
        )
    };
    // PVs sorted by device path, as LVM (and the CLI) sort them.
    let sorted_pvs = || {
        let mut pvs = inv.pvs();
        pvs.sort_by_cached_key(|p| path(p.device));
        pvs
    };
    match (what, format) {
        (Lvm::Vgs, Format::Json) => lvm_json::vgs_json(&inv.vgs()),
        (Lvm::Vgs, Format::Text) => lvm_table::vgs_table(&inv.vgs()),
        (Lvm::Pvs, Format::Json) => lvm_json::pvs_json(&sorted_pvs(), path),
        (Lvm::Pvs, Format::Text) => lvm_table::pvs_table(&sorted_pvs(), path),
        (Lvm::Devices, Format::Json) => lvm_json::devices_json(inv),
        (Lvm::Devices, Format::Text) => lvm_table::devices_table(inv),
    }
}
