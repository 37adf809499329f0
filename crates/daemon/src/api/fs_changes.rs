//! `GET /v1/fs/changes?root=PATH&since=INDEX`: what changed under a
//! watched root after a log index (`weir_fs::since::changes` over the
//! daemon's log), in the very bytes `weir fs changes` prints (weir-view's
//! `fs_changes::render`).
//!
//! `root` is taken as bytes (a path need not be UTF-8) and must be the
//! path as watched; `since` is required. A root the log holds no watch of
//! is `unknown_root`. While the tracker still reads the root's tree (its
//! first reading, or a start's reconciliation) the answer is `fresh`, the
//! log not holding its changes yet. An answer that cannot be complete is still a 200, with
//! `fresh: true` and `why`: the caller must read the tree again, which is
//! an answer, not a failure. The query reads the log on a blocking thread.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use weir_fs::since;
use weir_view::{fs_changes, lvm_view};

use super::context::Ctx;
use super::error::{ApiError, Code};
use super::inventory::bad_query;
use super::query::{Format, FsChangesQuery};

/// The handler.
pub(crate) async fn changes(
    State(ctx): State<Arc<Ctx>>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let q = FsChangesQuery::parse(q.as_deref()).map_err(bad_query)?;
    let log = ctx.state.log.clone();
    let root = PathBuf::from(OsString::from_vec(q.root));
    // Asked before the tracker has read the root: the log does not hold
    // its changes yet (they wait in the kernel's queue).
    let reading = ctx.state.fs.as_deref().is_some_and(|t| {
        t.roots()
            .iter()
            .any(|r| r.path == root && r.state == weir_fs::RootState::Reading)
    });
    let asked = root.clone();
    let answer = tokio::task::spawn_blocking(move || since::changes(&log, &asked, q.since))
        .await
        .map_err(|e| ApiError::join(&e))?;
    let last = ctx.state.log.last_index();
    let changes = match while_reading(answer, reading, root, q.since, last) {
        Ok(c) => c,
        Err(e @ since::Error::NotWatched { .. }) => {
            return Err(ApiError::new(Code::UnknownRoot, e.to_string()));
        }
        Err(since::Error::Log(e)) => return Err(e.into()),
        Err(e) => return Err(ApiError::new(Code::Internal, e.to_string())),
    };
    let (format, kind) = match q.format {
        Format::Json => (lvm_view::Format::Json, "application/json"),
        Format::Text => (lvm_view::Format::Text, "text/plain; charset=utf-8"),
    };
    Ok(([(CONTENT_TYPE, kind)], fs_changes::render(&changes, format)).into_response())
}

/// `answer`, made fresh while the tracker still reads the root (`reading`):
/// the log does not hold its changes yet, nor perhaps its MARK, so a root
/// not found in the log is such an answer too, with `last` (the log's last
/// index) to ask from next.
fn while_reading(
    answer: Result<since::Changes, since::Error>,
    reading: bool,
    root: PathBuf,
    asked: u64,
    last: u64,
) -> Result<since::Changes, since::Error> {
    if !reading {
        return answer;
    }
    let mut c = match answer {
        Ok(c) => c,
        Err(since::Error::NotWatched { .. }) => {
            let mut c = since::Changes::default();
            c.root = root;
            c.since = asked;
            c.next = last;
            c
        }
        Err(e) => return Err(e),
    };
    c.fresh = true;
    c.why = Some(since::Fresh::Reading);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_while_the_tree_is_read_is_fresh() {
        let root = PathBuf::from("/w");
        let not_watched = || {
            Err(since::Error::NotWatched {
                root: PathBuf::from("/w"),
            })
        };
        let mut found = since::Changes::default();
        found.next = 5;
        found.created = vec![b"a".to_vec()];
        let c = while_reading(Ok(found.clone()), true, root.clone(), 2, 9).unwrap();
        assert!(c.fresh);
        assert_eq!(c.why, Some(since::Fresh::Reading));
        assert_eq!((c.next, c.created.len()), (5, 1));
        let c = while_reading(not_watched(), true, root.clone(), 2, 9).unwrap();
        assert_eq!((c.fresh, c.since, c.next), (true, 2, 9));
        assert_eq!(c.root, root);
        assert_eq!(
            while_reading(Ok(found.clone()), false, root.clone(), 2, 9).unwrap(),
            found
        );
        assert!(matches!(
            while_reading(not_watched(), false, root, 2, 9),
            Err(since::Error::NotWatched { .. })
        ));
    }
}
