//! A scripted HTTP/1.1 responder on a temporary Unix socket: it records each
//! request (head and body) and answers with exactly the bytes a test gives,
//! in the pieces and with the pauses the test gives, so chunk boundaries,
//! slow streams and broken answers can all be produced on purpose.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One step of an answer.
pub(crate) enum Step {
    /// Write these bytes (one write call).
    Write(Vec<u8>),
    /// Pause.
    Sleep(Duration),
}

/// A request as the server saw it.
#[derive(Debug)]
pub(crate) struct Seen {
    /// The request line, e.g. `GET /v1/mounts HTTP/1.1`.
    pub(crate) line: String,
    /// Header lines, lowercased names, as `name: value`.
    pub(crate) headers: Vec<String>,
    /// The body.
    pub(crate) body: Vec<u8>,
}

impl Seen {
    /// The value of header `name` (lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}: ");
        self.headers
            .iter()
            .find_map(|h| h.strip_prefix(prefix.as_str()))
    }
}

/// The server: one connection, one scripted answer per request, in order.
pub(crate) struct Server {
    _dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    seen: mpsc::Receiver<Seen>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on a fresh socket and answers the first connection's
    /// requests with `answers`, one each; then it closes the connection.
    pub(crate) fn start(answers: Vec<Vec<Step>>) -> Server {
        let dir = tempfile::tempdir().expect("temporary directory");
        let socket = dir.path().join("test.sock");
        let listener = UnixListener::bind(&socket).expect("bind the test socket");
        let (tx, seen) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let (conn, _) = listener.accept().expect("accept");
            serve(conn, answers, &tx);
        });
        Server {
            _dir: dir,
            socket,
            seen,
            thread: Some(thread),
        }
    }

    /// The next request the server read.
    pub(crate) fn seen(&self) -> Seen {
        self.seen
            .recv_timeout(Duration::from_secs(10))
            .expect("a request reached the server")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            // A panic in the server thread (a test's bad script) shows here.
            if t.join().is_err() && !std::thread::panicking() {
                panic!("the test server failed");
            }
        }
    }
}

fn serve(conn: UnixStream, answers: Vec<Vec<Step>>, tx: &mpsc::Sender<Seen>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone the stream"));
    let mut conn = conn;
    for answer in answers {
        let Some(seen) = read_request(&mut reader) else {
            return;
        };
        let _ = tx.send(seen);
        for step in answer {
            match step {
                Step::Write(b) => {
                    // The client may have gone (a timeout test): stop quietly.
                    if conn.write_all(&b).is_err() {
                        return;
                    }
                }
                Step::Sleep(d) => std::thread::sleep(d),
            }
        }
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end().to_owned();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        headers.push(format!("{}: {}", name.to_ascii_lowercase(), value.trim()));
    }
    let mut seen = Seen {
        line: line.trim_end().to_owned(),
        headers,
        body: Vec::new(),
    };
    let len: usize = seen
        .header("content-length")
        .map_or(0, |v| v.parse().unwrap());
    seen.body.resize(len, 0);
    reader.read_exact(&mut seen.body).ok()?;
    Some(seen)
}

/// A whole answer with a Content-Length body.
pub(crate) fn fixed(status: &str, content_type: &str, body: &[u8]) -> Vec<Step> {
    let mut b = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    b.extend_from_slice(body);
    vec![Step::Write(b)]
}

/// The head of a chunked answer.
pub(crate) fn chunked_head(status: &str, content_type: &str) -> Step {
    Step::Write(
        format!("HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n")
            .into_bytes(),
    )
}

/// The head of a chunked answer that announces the `weir-error` trailer.
pub(crate) fn chunked_head_with_trailer(content_type: &str) -> Step {
    Step::Write(
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n\
             transfer-encoding: chunked\r\ntrailer: weir-error\r\n\r\n"
        )
        .into_bytes(),
    )
}

/// The end of a chunked body with a `weir-error` trailer holding the
/// error object of `code` and `message` (JSON-safe text).
pub(crate) fn error_trailer(code: &str, message: &str) -> Step {
    Step::Write(
        format!(
            "0\r\nweir-error: {{\"error\":{{\"code\":\"{code}\",\"message\":\"{message}\"}}}}\r\n\r\n"
        )
        .into_bytes(),
    )
}

/// One chunk of a chunked body.
pub(crate) fn chunk(data: &[u8]) -> Step {
    let mut b = format!("{:x}\r\n", data.len()).into_bytes();
    b.extend_from_slice(data);
    b.extend_from_slice(b"\r\n");
    Step::Write(b)
}

/// The end of a chunked body.
pub(crate) fn last_chunk() -> Step {
    Step::Write(b"0\r\n\r\n".to_vec())
}
