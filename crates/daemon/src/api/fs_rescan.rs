//! `POST /v1/fs/rescan?root=PATH`: the filesystem tracker compares a
//! watched root with the live tree now (`weir_fs::Tracker::rescan`) and
//! logs each difference; the answer, in the very bytes `weir fs rescan`
//! prints (weir-view's `fs_rescan::render`), comes once those records are
//! durable.
//!
//! A mutation: it appends records. `root` is taken as bytes and must be
//! absolute; a path no tracker watches (or a daemon that watches none) is
//! `unknown_root`, a tracker that has stopped `unavailable`. The rescan
//! runs on a blocking thread; the tracker reads no event meanwhile.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use weir_view::chain::error_chain;
use weir_view::{fs_rescan, lvm_view};

use super::context::Ctx;
use super::error::{ApiError, Code};
use super::inventory::bad_query;
use super::query::{Format, FsRescanQuery};

/// The handler.
pub(crate) async fn rescan(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = FsRescanQuery::parse(q.as_deref()).map_err(bad_query)?;
    let root = PathBuf::from(OsString::from_vec(q.root));
    let Some(tracker) = ctx.state.fs.clone() else {
        return Err(ApiError::new(
            Code::UnknownRoot,
            format!(
                "{}: not a watched root (the daemon watches no tree)",
                root.display()
            ),
        ));
    };
    let log = ctx.state.log.clone();
    let asked = root.clone();
    let found = tokio::task::spawn_blocking(move || {
        let r = tracker.rescan(&asked)?;
        // Answered once what it logged is durable, as a sync is.
        log.sync().map_err(weir_fs::Error::Log)?;
        Ok::<_, weir_fs::Error>(r)
    })
    .await
    .map_err(|e| ApiError::join(&e))?;
    let found = match found {
        Ok(r) => r,
        Err(e @ weir_fs::Error::NotARoot { .. }) => {
            return Err(ApiError::new(Code::UnknownRoot, e.to_string()));
        }
        Err(weir_fs::Error::Log(e)) => return Err(e.into()),
        Err(e) => {
            return Err(ApiError::new(
                Code::Unavailable,
                format!(
                    "the filesystem tracker could not rescan: {}",
                    error_chain(&e)
                ),
            ));
        }
    };
    let (format, kind) = match q.format {
        Format::Json => (lvm_view::Format::Json, "application/json"),
        Format::Text => (lvm_view::Format::Text, "text/plain; charset=utf-8"),
    };
    Ok((
        [(CONTENT_TYPE, kind)],
        fs_rescan::render(&root, &found, format),
    )
        .into_response())
}
