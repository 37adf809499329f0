//! The health check behind the watchdog: the trackers' threads are alive,
//! and the API answers `GET /v1/status` with 200 on its own socket, within
//! a deadline. Asking over the socket tests what clients use: the accept
//! loop, the runtime's workers and the handlers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::sources::Sources;

/// The request: HTTP/1.1, the connection closed after the answer.
const REQUEST: &[u8] = b"GET /v1/status HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n\r\n";
/// Enough of the answer to hold its status line.
const STATUS_LINE: usize = 12;

/// Why the daemon is not healthy.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unhealthy {
    /// A tracker's thread has ended.
    #[error("the {0} tracker's thread has ended")]
    TrackerEnded(&'static str),
    /// The socket did not take the request or give an answer.
    #[error("the API socket {path}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No answer within the deadline.
    #[error("the API did not answer within {0:?}")]
    Timeout(Duration),
    /// An answer other than `HTTP/1.x 200`.
    #[error("the API answered {0:?}")]
    Status(String),
}

/// Checks the trackers, then asks the API, for at most `deadline`.
pub(crate) async fn check(
    sources: &Sources,
    socket: &Path,
    deadline: Duration,
) -> Result<(), Unhealthy> {
    if let Some(name) = sources.ended() {
        return Err(Unhealthy::TrackerEnded(name));
    }
    match tokio::time::timeout(deadline, ask(socket)).await {
        Ok(r) => r,
        Err(_) => Err(Unhealthy::Timeout(deadline)),
    }
}

async fn ask(socket: &Path) -> Result<(), Unhealthy> {
    let io = |source| Unhealthy::Io {
        path: socket.to_owned(),
        source,
    };
    let mut s = tokio::net::UnixStream::connect(socket).await.map_err(io)?;
    s.write_all(REQUEST).await.map_err(io)?;
    let mut head = [0u8; STATUS_LINE];
    let mut got = 0;
    while got < head.len() {
        let n = s.read(&mut head[got..]).await.map_err(io)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    let line = &head[..got];
    // "HTTP/1.1 200"; the version's minor digit may differ.
    if line.len() == STATUS_LINE && line.starts_with(b"HTTP/1.") && &line[8..] == b" 200" {
        Ok(())
    } else {
        Err(Unhealthy::Status(
            String::from_utf8_lossy(line).into_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::UnixListener;

    /// A server that answers every connection with `answer` (or nothing,
    /// and keeps it open, when `None`).
    fn serve(path: &Path, answer: Option<&'static [u8]>) {
        let l = UnixListener::bind(path).unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    let mut req = [0u8; 256];
                    let _ = s.read(&mut req).await;
                    match answer {
                        Some(a) => {
                            let _ = s.write_all(a).await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                });
            }
        });
    }

    fn no_sources() -> Sources {
        Sources {
            mounts: None,
            devices: None,
            fs: None,
        }
    }

    #[tokio::test]
    async fn healthy_only_on_a_200() {
        let d = tempfile::tempdir().unwrap();
        // Long for the servers that answer, so that a loaded machine does
        // not turn their answers into timeouts; short for the silent one.
        let deadline = Duration::from_secs(10);
        let ok = d.path().join("ok.sock");
        serve(&ok, Some(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"));
        check(&no_sources(), &ok, deadline).await.unwrap();

        let busy = d.path().join("busy.sock");
        serve(&busy, Some(b"HTTP/1.1 503 Service Unavailable\r\n\r\n"));
        let e = check(&no_sources(), &busy, deadline).await.unwrap_err();
        assert!(
            matches!(&e, Unhealthy::Status(s) if s.contains("503")),
            "{e}"
        );

        let short = d.path().join("short.sock");
        serve(&short, Some(b"HTTP/1.1 2"));
        assert!(matches!(
            check(&no_sources(), &short, deadline).await,
            Err(Unhealthy::Status(_))
        ));

        let silent = d.path().join("silent.sock");
        serve(&silent, None);
        assert!(matches!(
            check(&no_sources(), &silent, Duration::from_millis(300)).await,
            Err(Unhealthy::Timeout(_))
        ));

        assert!(matches!(
            check(&no_sources(), &d.path().join("none.sock"), deadline).await,
            Err(Unhealthy::Io { .. })
        ));
    }
}
