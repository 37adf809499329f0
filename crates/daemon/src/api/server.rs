//! The accept loop: HTTP/1.1 over the Unix socket, one task per
//! connection, the peer's credentials read at accept and put into each of
//! its requests.
//!
//! Shutdown: stop accepting, end the follow streams, ask every connection
//! to finish its request in flight and close, wait up to [`GRACE`], then
//! abort what is left. When [`serve`] returns, no task of it holds the
//! [`ApiState`] any more, so the host can take the trackers back.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

use super::context::Ctx;
use super::error::Error;
use super::head;
use super::peer::Peer;
use super::state::ApiState;

/// How long connections get to finish once the server stops.
const GRACE: Duration = Duration::from_secs(5);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause after an accept error that is about resources (too many
/// open files), so the loop does not spin while they are short.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves the API on `listener` until `shutdown` resolves; then finishes
/// the requests in flight, ends the follow streams and returns.
pub async fn serve(
    listener: UnixListener,
    state: Arc<ApiState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let ctx = Ctx::new(state);
    let router = super::build(ctx.clone());
    let (closing, closing_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let result = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(connection(stream, router.clone(), closing_rx.clone()));
                }
                Err(e) if transient(&e) => {
                    tracing::warn!(error = %e, "accepting an API connection failed; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                Err(e) => break Err(Error::Accept(e)),
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    };
    drop(listener);
    ctx.stop_streams();
    closing.send_replace(true);
    let drained =
        tokio::time::timeout(GRACE, async { while conns.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            connections = conns.len(),
            "API connections still open after {} s; closing them",
            GRACE.as_secs()
        );
        conns.shutdown().await;
    }
    drop(router);
    drop(ctx);
    result
}

/// Accept errors that concern one connection or a passing shortage.
fn transient(e: &io::Error) -> bool {
    use rustix::io::Errno;
    let Some(raw) = e.raw_os_error() else {
        return false;
    };
    [
        Errno::CONNABORTED,
        Errno::INTR,
        Errno::AGAIN,
        Errno::MFILE,
        Errno::NFILE,
        Errno::NOBUFS,
        Errno::NOMEM,
        Errno::PROTO,
        Errno::PERM,
    ]
    .iter()
    .any(|x| x.raw_os_error() == raw)
}

/// Serves one connection until it ends, or until `closing` asks it to
/// finish its current request and close.
async fn connection(stream: UnixStream, router: Router, mut closing: watch::Receiver<bool>) {
    let peer = match Peer::of(&stream) {
        Ok(p) => Some(p),
        Err(e) => {
            // Its requests are then "anyone else" for the access rule.
            tracing::warn!(error = %weir_view::chain::error_chain(&e), "cannot identify an API peer");
            None
        }
    };
    // The first head is checked here, so that a malformed one gets the
    // JSON error body (see `head`). Within hyper's own header timeout, and
    // given up when the server stops: hyper would close such a
    // connection without an answer too.
    let first = tokio::select! {
        r = tokio::time::timeout(HEADER_TIMEOUT, head::first(stream)) => r,
        Ok(_) = closing.wait_for(|&c| c) => return,
    };
    let stream = match first {
        Ok(Ok(head::First::Serve(s))) => s,
        Ok(Ok(head::First::Answered | head::First::Closed)) => return,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "an API connection failed before its first request");
            return;
        }
        Err(_elapsed) => return,
    };
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        if let Some(p) = &peer {
            req.extensions_mut().insert(p.clone());
        }
        router.clone().oneshot(req.map(Body::new))
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    let mut conn = std::pin::pin!(conn);
    let mut asked = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "an API connection ended with an error");
                }
                return;
            }
            ok = async { closing.wait_for(|&c| c).await.is_ok() }, if !asked => {
                asked = true;
                if ok {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}
