//! `POST /v1/sync`: the barrier. It returns the log index up to which
//! every change that happened before the call is recorded.
//!
//! Every tracker's `sync()` runs at once on a blocking thread (each returns
//! once every change before it is applied and appended; the filesystem
//! tracker's, once a cookie made in each watched root has come back
//! through the kernel's queue, and its records are durable); then the log
//! is synced, so that what they appended is committed (and durable) and
//! the index returned covers it.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use weir_view::chain::error_chain;

use super::context::Ctx;
use super::error::{ApiError, Code, json_response};
use super::inventory::bad_query;
use super::query::parse_empty;

fn failed(what: &str, e: &(dyn std::error::Error + 'static)) -> ApiError {
    ApiError::new(
        Code::Unavailable,
        format!("the {what} tracker could not sync: {}", error_chain(e)),
    )
}

/// The handler.
pub(crate) async fn sync(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    parse_empty(q.as_deref()).map_err(bad_query)?;
    let mounts = ctx
        .state
        .mounts
        .clone()
        .map(|t| tokio::task::spawn_blocking(move || t.sync()));
    let devices = ctx
        .state
        .devices
        .clone()
        .map(|t| tokio::task::spawn_blocking(move || t.sync()));
    let fs = ctx
        .state
        .fs
        .clone()
        .map(|t| tokio::task::spawn_blocking(move || t.sync()));
    if let Some(h) = mounts {
        h.await
            .map_err(|e| ApiError::join(&e))?
            .map_err(|e| failed("mount", &e))?;
    }
    if let Some(h) = devices {
        h.await
            .map_err(|e| ApiError::join(&e))?
            .map_err(|e| failed("device", &e))?;
    }
    if let Some(h) = fs {
        h.await
            .map_err(|e| ApiError::join(&e))?
            .map_err(|e| failed("filesystem", &e))?;
    }
    let log = ctx.state.log.clone();
    let index = tokio::task::spawn_blocking(move || {
        let durable = log.sync()?;
        Ok::<_, weir_log::Error>(durable.map_or(0, |d| d.index()).max(log.last_index()))
    })
    .await
    .map_err(|e| ApiError::join(&e))??;
    Ok(json_response(
        StatusCode::OK,
        serde_json::json!({ "index": index }).to_string(),
    ))
}
