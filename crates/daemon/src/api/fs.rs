//! `GET /v1/fs`: the directory trees the filesystem tracker watches, in
//! the very bytes `weir fs` prints (weir-view's `fs_view::render`, from
//! the roots of the status object's `fs` section, so the two agree).
//!
//! A daemon that watches no tree answers an empty listing, not an error:
//! "nothing is watched" is what `weir fs` has to say then. A tracker
//! whose thread has stopped still lists its roots as last published
//! (`GET /v1/status` says it stopped). Nothing is cached: a listing is a
//! few roots, and every figure in it moves with every event.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use weir_view::fs_view;
use weir_view::lvm_view;

use super::context::Ctx;
use super::error::ApiError;
use super::inventory::bad_query;
use super::query::{Format, FsQuery};

/// The handler.
pub(crate) async fn list(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = FsQuery::parse(q.as_deref()).map_err(bad_query)?;
    let roots = ctx
        .state
        .fs
        .as_deref()
        .map(|t| super::status::fs(t).roots)
        .unwrap_or_default();
    let (format, kind) = match q.format {
        Format::Json => (lvm_view::Format::Json, "application/json"),
        Format::Text => (lvm_view::Format::Text, "text/plain; charset=utf-8"),
    };
    Ok(([(CONTENT_TYPE, kind)], fs_view::render(&roots, format)).into_response())
}
