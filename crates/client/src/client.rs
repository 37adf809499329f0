//! [`Client`]: one HTTP/1.1 connection to the daemon's socket, driven by a
//! current-thread tokio runtime that the client owns, behind blocking calls.
//!
//! The connection is made with a plain blocking `connect(2)` first, so that
//! when no daemon listens (the common case for a CLI on a machine without
//! one) no runtime is built at all. Requests go one at a time; a listing's
//! answer is copied frame by frame to the caller's writer as it arrives.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONNECTION, CONTENT_TYPE, HOST, TE};
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::runtime::Runtime;

use crate::error::{self, Error};
use crate::lines::LineStream;

/// The most bytes of a JSON answer read into memory.
pub const MAX_JSON_BODY: usize = 64 << 20;

/// How long a request waits for the answer to begin, by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection to the daemon. Calls block; one request at a time.
pub struct Client {
    rt: Runtime,
    sender: SendRequest<Full<Bytes>>,
    socket: PathBuf,
    timeout: Option<Duration>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("socket", &self.socket)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the daemon on `socket`. `Ok(None)` when nothing listens
    /// there (no such file, or connection refused: a stale socket file);
    /// any other failure, such as permission denied, is an error.
    pub fn connect(socket: &Path) -> Result<Option<Client>, Error> {
        let connect_err = |source| Error::Connect {
            socket: socket.to_owned(),
            source,
        };
        let stream = match std::os::unix::net::UnixStream::connect(socket) {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(connect_err(e)),
        };
        stream.set_nonblocking(true).map_err(connect_err)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(Error::Runtime)?;
        let sender = rt.block_on(async {
            let stream = tokio::net::UnixStream::from_std(stream).map_err(connect_err)?;
            let (sender, conn) = http1::handshake(TokioIo::new(stream))
                .await
                .map_err(Error::Http)?;
            // The connection's errors reach the caller through its requests.
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok::<_, Error>(sender)
        })?;
        Ok(Some(Client {
            rt,
            sender,
            socket: socket.to_owned(),
            timeout: Some(DEFAULT_TIMEOUT),
        }))
    }

    /// The socket this client is connected to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// How long a request waits for its answer to begin (`None`: forever).
    /// A streamed body, once begun, is never cut short by it.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// `GET target`, its body copied to `out` as it arrives, then `out`
    /// flushed. Returns the number of bytes copied.
    pub fn get_text(&mut self, target: &str, out: &mut dyn Write) -> Result<u64, Error> {
        self.copy_text(request(Method::GET, target, None)?, out)
    }

    /// `POST target` without a body, the answer's body copied to `out` as
    /// [`Client::get_text`] copies it.
    pub fn post_text(&mut self, target: &str, out: &mut dyn Write) -> Result<u64, Error> {
        self.copy_text(request(Method::POST, target, None)?, out)
    }

    fn copy_text(&mut self, req: Request<Full<Bytes>>, out: &mut dyn Write) -> Result<u64, Error> {
        let Client {
            rt,
            sender,
            timeout,
            ..
        } = self;
        rt.block_on(async {
            let mut body = send(sender, *timeout, req).await?.into_body();
            let mut copied = 0u64;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(Error::Http)?;
                match frame.into_data() {
                    Ok(data) => {
                        out.write_all(&data).map_err(Error::Write)?;
                        copied += data.len() as u64;
                    }
                    Err(frame) => {
                        if let Some(e) = frame.trailers_ref().and_then(error::from_trailers) {
                            out.flush().map_err(Error::Write)?;
                            return Err(e.to_error());
                        }
                    }
                }
            }
            out.flush().map_err(Error::Write)?;
            Ok(copied)
        })
    }

    /// `GET target`, its JSON answer decoded.
    pub fn get_json<T: DeserializeOwned>(&mut self, target: &str) -> Result<T, Error> {
        self.exchange_json(request(Method::GET, target, None)?)
    }

    /// `POST target` with `body` as JSON, the JSON answer decoded (an empty
    /// answer decodes as `null`, so `T = ()` takes a 204).
    pub fn post_json<B: Serialize + ?Sized, T: DeserializeOwned>(
        &mut self,
        target: &str,
        body: &B,
    ) -> Result<T, Error> {
        let body = serde_json::to_vec(body).map_err(Error::Encode)?;
        self.exchange_json(request(Method::POST, target, Some(body))?)
    }

    /// `POST target` without a body, the JSON answer decoded.
    pub fn post<T: DeserializeOwned>(&mut self, target: &str) -> Result<T, Error> {
        self.exchange_json(request(Method::POST, target, None)?)
    }

    /// `DELETE target`; any success status will do.
    pub fn delete(&mut self, target: &str) -> Result<(), Error> {
        let req = request(Method::DELETE, target, None)?;
        let Client {
            rt,
            sender,
            timeout,
            ..
        } = self;
        rt.block_on(async {
            let mut body = send(sender, *timeout, req).await?.into_body();
            collect(&mut body, MAX_JSON_BODY).await?;
            Ok(())
        })
    }

    /// `GET target` as a stream of lines (`application/x-ndjson`, or text),
    /// for answers that may never end, like `follow=true`.
    pub fn get_lines(&mut self, target: &str) -> Result<LineStream<'_>, Error> {
        let req = request(Method::GET, target, None)?;
        let Client {
            rt,
            sender,
            timeout,
            ..
        } = self;
        let body = rt.block_on(send(sender, *timeout, req))?.into_body();
        Ok(LineStream::new(rt, body))
    }

    fn exchange_json<T: DeserializeOwned>(
        &mut self,
        req: Request<Full<Bytes>>,
    ) -> Result<T, Error> {
        let Client {
            rt,
            sender,
            timeout,
            ..
        } = self;
        let bytes = rt.block_on(async {
            let mut body = send(sender, *timeout, req).await?.into_body();
            collect(&mut body, MAX_JSON_BODY).await
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"null"
        } else {
            &bytes
        };
        serde_json::from_slice(bytes).map_err(Error::Decode)
    }
}

fn request(
    method: Method,
    target: &str,
    json: Option<Vec<u8>>,
) -> Result<Request<Full<Bytes>>, Error> {
    let mut b = Request::builder()
        .method(method)
        .uri(target)
        // HTTP/1.1 requires a Host; a Unix socket has no host name.
        .header(HOST, "localhost")
        // A stream that fails after its 200 says why in a trailer. TE is
        // hop-by-hop, so it is named in Connection too (RFC 9110, 10.1.4).
        .header(TE, "trailers")
        .header(CONNECTION, "TE");
    if json.is_some() {
        b = b.header(CONTENT_TYPE, "application/json");
    }
    b.body(Full::new(Bytes::from(json.unwrap_or_default())))
        .map_err(|source| Error::BadTarget {
            target: target.to_owned(),
            source,
        })
}

/// Sends `req` and waits for the answer's head; a failure status becomes
/// the error its body describes.
async fn send(
    sender: &mut SendRequest<Full<Bytes>>,
    timeout: Option<Duration>,
    req: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, Error> {
    let exchange = async {
        sender.ready().await.map_err(Error::Http)?;
        sender.send_request(req).await.map_err(Error::Http)
    };
    let resp = match timeout {
        Some(after) => tokio::time::timeout(after, exchange)
            .await
            .map_err(|_| Error::Timeout { after })??,
        None => exchange.await?,
    };
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let mut body = resp.into_body();
    let text = match collect(&mut body, error::MAX_ERROR_BODY).await {
        Ok(t) => t,
        Err(Error::TooLarge { .. }) => b"(an over-long error answer)".to_vec(),
        Err(e) => return Err(e),
    };
    Err(error::from_answer(status.as_u16(), &text))
}

/// Reads a whole body, refusing one longer than `limit`.
async fn collect(body: &mut Incoming, limit: usize) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Error::Http)?;
        match frame.into_data() {
            Ok(data) => {
                if data.len() > limit - buf.len() {
                    return Err(Error::TooLarge { limit });
                }
                buf.extend_from_slice(&data);
            }
            Err(frame) => {
                if let Some(e) = frame.trailers_ref().and_then(error::from_trailers) {
                    return Err(e.to_error());
                }
            }
        }
    }
    Ok(buf)
}
