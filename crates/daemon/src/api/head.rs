//! The first request of a connection, checked before hyper reads it.
//!
//! hyper answers a request head it cannot parse with a 400 of its own: no
//! body, and no hook or builder option to change it. Every other API error
//! has the JSON error body, so the server parses the first head itself,
//! with the parser hyper uses (`httparse`), and answers a malformed one in
//! the API's shape (`bad_request`); a good head is handed to hyper whole,
//! through [`Prefixed`]. Later requests on a kept-alive connection are
//! hyper's alone: a client that sends a malformed one after a good one
//! still gets hyper's bare 400.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::{Method, Uri};
use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::UnixStream;

use super::error::{ApiError, Code};

/// hyper's default limits: a head that hyper would take is never refused
/// here, and one beyond them is left to hyper (431).
const MAX_HEADERS: usize = 100;
const MAX_HEAD: usize = 8192 + 4096 * 100;

/// What the first head turned out to be.
pub(super) enum First {
    /// A head hyper can parse (or one too large, which hyper refuses):
    /// serve the connection with it.
    Serve(Prefixed),
    /// Malformed: answered here, and the connection is done.
    Answered,
    /// The client closed before sending a whole head.
    Closed,
}

/// Reads the first request head from `stream`; answers it with a JSON
/// 400 if it does not parse.
pub(super) async fn first(mut stream: UnixStream) -> io::Result<First> {
    let mut buf = BytesMut::with_capacity(1024);
    loop {
        match check(&buf) {
            Check::Good => break,
            Check::Bad(why) => {
                let body = ApiError::new(
                    Code::BadRequest,
                    format!("the request is not valid HTTP/1.1: {why}"),
                )
                .body();
                let reply = format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(reply.as_bytes()).await?;
                stream.shutdown().await?;
                return Ok(First::Answered);
            }
            Check::Partial if buf.len() >= MAX_HEAD => break,
            Check::Partial => {
                if stream.read_buf(&mut buf).await? == 0 {
                    return Ok(First::Closed);
                }
            }
        }
    }
    Ok(First::Serve(Prefixed {
        head: buf.freeze(),
        inner: stream,
    }))
}

/// What the bytes read so far make of a request head.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Check {
    /// A whole head hyper can parse (or one with more headers than hyper
    /// takes, which hyper refuses itself).
    Good,
    /// A prefix of a head: read on.
    Partial,
    /// Not HTTP/1.1 hyper would parse, and why.
    Bad(String),
}

/// Whether `buf` starts with a head hyper would parse: `httparse` as hyper
/// calls it, then the method and target as hyper converts them. Bytes
/// after the head (a body) do not count.
pub fn check(buf: &[u8]) -> Check {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => Check::Partial,
        // hyper answers these 431 itself.
        Err(httparse::Error::TooManyHeaders) => Check::Good,
        Err(e) => Check::Bad(e.to_string()),
        Ok(httparse::Status::Complete(_)) => {
            let method = req.method.unwrap_or_default();
            let target = req.path.unwrap_or_default();
            if Method::from_bytes(method.as_bytes()).is_err() {
                Check::Bad("invalid method".to_owned())
            } else if target.parse::<Uri>().is_err() {
                Check::Bad("invalid request target".to_owned())
            } else {
                Check::Good
            }
        }
    }
}

/// The stream, with the bytes already read from it in front.
pub(super) struct Prefixed {
    head: Bytes,
    inner: UnixStream,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.head.has_remaining() {
            let n = this.head.len().min(buf.remaining());
            buf.put_slice(&this.head[..n]);
            this.head.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// A head hyper takes: a method, an origin-form target and headers.
    fn arb_head() -> impl Strategy<Value = Vec<u8>> {
        let method = prop::sample::select(vec!["GET", "POST", "DELETE", "PUT"]);
        let target = "/[a-z0-9/._-]{0,40}(\\?[a-z0-9=&%]{0,40})?";
        let header = ("[A-Za-z][A-Za-z0-9-]{0,20}", "[ -~]{0,40}");
        (method, target, prop::collection::vec(header, 0..8)).prop_map(|(m, t, hs)| {
            let mut head = format!("{m} {t} HTTP/1.1\r\n");
            for (k, v) in hs {
                head.push_str(&format!("{k}: {}\r\n", v.trim()));
            }
            head.push_str("\r\n");
            head.into_bytes()
        })
    }

    proptest! {
        /// Any bytes get an answer, never a panic.
        #[test]
        fn any_bytes_are_judged(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = check(&bytes);
        }

        /// A good head is good with a body after it, and every prefix of
        /// it (a head split across reads) is partial, never refused early.
        #[test]
        fn a_good_head_is_good_whole_and_partial_before(head in arb_head(), body in prop::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(check(&head), Check::Good);
            let mut with_body = head.clone();
            with_body.extend_from_slice(&body);
            prop_assert_eq!(check(&with_body), Check::Good);
            for cut in 0..head.len() {
                prop_assert_eq!(check(&head[..cut]), Check::Partial, "cut at {}", cut);
            }
        }
    }

    #[test]
    fn heads_are_judged_as_hyper_judges_them() {
        assert!(matches!(
            check(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n"),
            Check::Good
        ));
        assert!(matches!(
            check(b"GET /v1/status HTTP/1.1\r\nHo"),
            Check::Partial
        ));
        assert!(matches!(check(b""), Check::Partial));
        assert!(matches!(check(b"hello there\r\n\r\n"), Check::Bad(_)));
        assert!(matches!(check(b"GET / HTTP/9.9\r\n\r\n"), Check::Bad(_)));
        assert!(matches!(
            check(b"GET / HTTP/1.1\r\nno colon\r\n\r\n"),
            Check::Bad(_)
        ));
    }
}
