//! A bare HTTP/1.1 client over the daemon's Unix socket, for the contract
//! test: it sends exactly the bytes it is given (bad JSON, odd queries and
//! all), which no well-behaved client library would, and reads the answer
//! whole, or, for a chunked answer that stays open (a follow stream), what
//! came before it fell quiet.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long any answer may take to begin or, unless it is chunked, to end.
const PATIENCE: Duration = Duration::from_secs(30);

/// How long a chunked answer may stay quiet before the client stops
/// reading: a follow stream never ends by itself.
const QUIET: Duration = Duration::from_millis(250);

/// One request.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// Path and query, already percent-encoded.
    pub(crate) target: &'a str,
    pub(crate) headers: &'a [(String, String)],
    /// Sent with `Content-Type: application/json` and its length.
    pub(crate) body: Option<&'a [u8]>,
}

/// One answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    /// Names in lower case.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// The client stopped reading a chunked answer that had fallen quiet.
    pub(crate) cut: bool,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The media type, without parameters.
    pub(crate) fn media_type(&self) -> Option<&str> {
        self.header("content-type")
            .map(|v| v.split(';').next().unwrap_or("").trim())
    }
}

/// What went wrong talking to the daemon (never the daemon's refusal:
/// that is a [`Reply`]).
#[derive(Debug)]
pub(crate) enum HttpError {
    Io(std::io::Error),
    /// No whole answer head within [`PATIENCE`], or a malformed one.
    BadAnswer(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Io(e) => write!(f, "talking to the daemon: {e}"),
            HttpError::BadAnswer(why) => write!(f, "a bad answer: {why}"),
        }
    }
}

impl From<std::io::Error> for HttpError {
    fn from(e: std::io::Error) -> HttpError {
        HttpError::Io(e)
    }
}

/// Sends `req` on a new connection and reads the answer.
pub(crate) fn send(socket: &Path, req: &Request<'_>) -> Result<Reply, HttpError> {
    let mut s = UnixStream::connect(socket)?;
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n",
        req.method, req.target
    );
    for (k, v) in req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = req.body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    } else if req.method == "POST" {
        head.push_str("Content-Length: 0\r\n");
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(req.body.unwrap_or_default());
    s.write_all(&bytes)?;
    read_reply(&mut s)
}

fn read_reply(s: &mut UnixStream) -> Result<Reply, HttpError> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 << 10];
    let mut last_byte = Instant::now();
    let mut cut = false;
    s.set_read_timeout(Some(Duration::from_millis(50)))?;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                last_byte = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e.into()),
        }
        let head_end = find(&got, b"\r\n\r\n");
        let chunked = head_end.is_some_and(|end| {
            String::from_utf8_lossy(&got[..end])
                .to_ascii_lowercase()
                .contains("\r\ntransfer-encoding: chunked")
        });
        if chunked && last_byte.elapsed() > QUIET {
            cut = true;
            break;
        }
        if start.elapsed() > PATIENCE {
            return Err(HttpError::BadAnswer(format!(
                "no whole answer within {PATIENCE:?}: {:?}",
                String::from_utf8_lossy(&got)
            )));
        }
    }
    parse(&got, cut)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse(got: &[u8], cut: bool) -> Result<Reply, HttpError> {
    let bad =
        |why: &str| HttpError::BadAnswer(format!("{why}: {:?}", String::from_utf8_lossy(got)));
    let end = find(got, b"\r\n\r\n").ok_or_else(|| bad("no end of the head"))?;
    let head = std::str::from_utf8(&got[..end]).map_err(|_| bad("a head that is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let raw = &got[end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(raw, cut).map_err(bad)?
    } else {
        raw.to_vec()
    };
    Ok(Reply {
        status,
        headers,
        body,
        cut,
    })
}

/// The data of a chunked body; with `cut`, the whole chunks read so far.
fn dechunk(mut raw: &[u8], cut: bool) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = find(raw, b"\r\n") else {
            return if cut {
                Ok(out)
            } else {
                Err("a chunk without its size line")
            };
        };
        let size_text = std::str::from_utf8(&raw[..eol]).map_err(|_| "a bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "a bad chunk size")?;
        if size == 0 {
            // The trailers, if any, follow; the body is whole.
            return Ok(out);
        }
        let data = &raw[eol + 2..];
        if data.len() < size + 2 {
            return if cut { Ok(out) } else { Err("a short chunk") };
        }
        out.extend_from_slice(&data[..size]);
        raw = &data[size + 2..];
    }
}

/// Percent-encodes every byte outside `A-Z a-z 0-9 - . _ ~`.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_joined_and_a_cut_stream_keeps_its_whole_chunks() {
        let raw = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(dechunk(raw, false).unwrap(), b"abcde");
        assert_eq!(dechunk(&raw[..12], true).unwrap(), b"abc");
        assert!(dechunk(&raw[..12], false).is_err());
    }
}
