//! The body of `GET /v1/log/records`: lines from the stream's
//! [`Cursor`] (the shared window of lines rendered once by the commit
//! notifier, or the stream's own reader), sent in chunks; with
//! `follow=true`, it then waits for commits and sends what is new.
//!
//! No thread is parked per stream: a caught-up stream awaits the commit
//! notifier's `watch` ([`super::commits`]) and, on waking, copies its new
//! lines from the window on the server's threads. A follow stream ends
//! when the server stops ([`super::context::Ctx::stop_streams`]) or the
//! client goes away (the body is dropped). Nothing waits for a stream
//! that is not read: the window moves on without it, and the stream reads
//! the log itself when it is read again.
//!
//! A stream that fails after its 200 (its next record was collected while
//! its client was slow, or the log could not be read) must still say so.
//! An HTTP/1.1 client that sent `TE: trailers` gets the error object in the
//! `weir-error` trailer after the last whole line; for any other, the body
//! is cut off without its last chunk, which HTTP clients report as an
//! error, rather than ending it as if all went well.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http_body_util::StreamBody;
use hyper::body::Frame;
use tokio::sync::watch;

use super::context::{Ctx, FollowerGuard};
use super::cursor::Cursor;
use super::error::{ApiError, ERROR_TRAILER};
use super::window::Window;

/// A caught-up stream looks again this often even without a notice from
/// the notifier (a safety net, and the only wake-up if it failed to
/// start).
const RECHECK: Duration = Duration::from_secs(1);

/// A stream of records.
pub(crate) struct Tail {
    ctx: Arc<Ctx>,
    window: Arc<Window>,
    cursor: Cursor,
    /// Keep waiting for new records once caught up.
    follow: Option<FollowerGuard>,
}

/// What one step of the stream yields.
type Item = Result<Bytes, weir_log::Error>;

impl Tail {
    /// A stream from `cursor`, following when `follow` is given.
    pub(crate) fn new(ctx: Arc<Ctx>, cursor: Cursor, follow: Option<FollowerGuard>) -> Tail {
        Tail {
            window: ctx.notifier.window().clone(),
            ctx,
            cursor,
            follow,
        }
    }

    /// The response body. With `trailers`, a failure ends it with the
    /// [`ERROR_TRAILER`]; without, a failure aborts it.
    pub(crate) fn into_body(self, trailers: bool) -> Body {
        let frames = self.into_stream().map(move |item| match item {
            Ok(bytes) => Ok(Frame::data(bytes)),
            Err(e) if trailers => {
                let mut map = HeaderMap::new();
                map.insert(ERROR_TRAILER, ApiError::from(e).trailer());
                Ok(Frame::trailers(map))
            }
            Err(e) => Err(e),
        });
        Body::new(StreamBody::new(frames))
    }

    /// The stream of chunks; it ends after an error.
    fn into_stream(self) -> impl Stream<Item = Item> + Send + 'static {
        let commits = self.ctx.commits.clone();
        let stop = self.ctx.stop.subscribe();
        futures_util::stream::unfold(Some((self, commits, stop)), |state| async move {
            let (mut t, mut commits, mut stop) = state?;
            loop {
                // A follower that never catches up must still stop.
                if t.follow.is_some() && *stop.borrow() {
                    return None;
                }
                let mut buf = Vec::new();
                let following = t.follow.is_some();
                match t
                    .cursor
                    .fill(&t.ctx.state.log, &t.window, following, &mut buf)
                {
                    Err(e) if buf.is_empty() => {
                        tracing::warn!(error = %weir_view::chain::error_chain(&e), "a record stream failed");
                        return Some((Err(e), None));
                    }
                    // Send what was read; the error comes again next.
                    _ if !buf.is_empty() => {
                        return Some((Ok(Bytes::from(buf)), Some((t, commits, stop))));
                    }
                    _ => {}
                }
                // Records its mask skips used up the fill's budget: let
                // other tasks run, then look on.
                if t.cursor.behind() {
                    tokio::task::yield_now().await;
                    continue;
                }
                if t.cursor.done() || !following {
                    return None;
                }
                if !t.wait(&mut commits, &mut stop).await {
                    return None;
                }
            }
        })
    }

    /// Waits until the notifier has published a record at or past the
    /// stream's position. `false`: the server is stopping.
    async fn wait(
        &self,
        commits: &mut watch::Receiver<u64>,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let pos = self.cursor.position();
        let notifier_gone = tokio::select! {
            _ = stop.wait_for(|&s| s) => return false,
            r = tokio::time::timeout(RECHECK, commits.wait_for(|&c| c >= pos)) => {
                matches!(r, Ok(Err(_)))
            }
        };
        // A closed notifier is no reason to end: the recheck goes on.
        if notifier_gone {
            tokio::time::sleep(RECHECK).await;
        }
        !*stop.borrow()
    }
}
