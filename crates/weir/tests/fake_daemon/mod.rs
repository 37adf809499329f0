//! A stand-in for the daemon's API on a temporary socket: fixed answers by
//! method and path, every request recorded. It lets the CLI's daemon path
//! be tested byte for byte without the daemon: what the CLI asks, and that
//! it prints exactly what it is answered.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// An answer: status line, content type and body, sent with a
/// Content-Length, or in chunks (then the connection closes after it).
#[derive(Clone)]
pub(crate) struct Answer {
    status: &'static str,
    content_type: &'static str,
    body: Vec<u8>,
    chunks: Option<Vec<Vec<u8>>>,
}

impl Answer {
    /// 200 with a JSON body.
    pub(crate) fn json(body: &str) -> Answer {
        Answer::with("200 OK", "application/json", body.as_bytes())
    }

    /// Any status, type and body.
    pub(crate) fn with(status: &'static str, content_type: &'static str, body: &[u8]) -> Answer {
        Answer {
            status,
            content_type,
            body: body.to_vec(),
            chunks: None,
        }
    }

    /// An API error object.
    pub(crate) fn error(status: &'static str, code: &str, message: &str) -> Answer {
        let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
        Answer::with(status, "application/json", body.as_bytes())
    }

    /// 200 with a chunked body, one chunk per piece, then the end.
    pub(crate) fn chunked(content_type: &'static str, pieces: &[&[u8]]) -> Answer {
        Answer {
            status: "200 OK",
            content_type,
            body: Vec::new(),
            chunks: Some(pieces.iter().map(|p| p.to_vec()).collect()),
        }
    }
}

/// A request as the fake saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    /// `METHOD TARGET`, e.g. `GET /v1/mounts?format=json`.
    pub(crate) request: String,
    pub(crate) body: Vec<u8>,
}

/// The fake daemon. Its threads live until the test process ends.
pub(crate) struct FakeDaemon {
    _dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakeDaemon {
    /// Answers `METHOD /path` (the query is ignored) from `answers`; other
    /// requests get 404 `not_found`.
    pub(crate) fn start(answers: &[(&str, Answer)]) -> FakeDaemon {
        let dir = tempfile::tempdir().expect("temporary directory");
        let socket = dir.path().join("fake.sock");
        let listener = UnixListener::bind(&socket).expect("bind");
        let answers: Arc<HashMap<String, Answer>> = Arc::new(
            answers
                .iter()
                .map(|(k, a)| ((*k).to_owned(), a.clone()))
                .collect(),
        );
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (answers, log) = (answers.clone(), log.clone());
                std::thread::spawn(move || serve(conn, &answers, &log));
            }
        });
        FakeDaemon {
            _dir: dir,
            socket,
            seen,
        }
    }

    /// Every request so far, in order.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// `weir --socket SOCKET ARGS...`, not started.
    pub(crate) fn weir(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_weir"));
        c.arg("--socket").arg(&self.socket).args(args);
        c
    }
}

fn serve(conn: UnixStream, answers: &HashMap<String, Answer>, log: &Mutex<Vec<Seen>>) {
    let mut r = BufReader::new(conn.try_clone().expect("clone"));
    let mut w = conn;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let mut words = line.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        log.lock().unwrap().push(Seen {
            request: format!("{method} {target}"),
            body,
        });
        let path = target.split('?').next().unwrap_or("");
        let answer = answers
            .get(&format!("{method} {path}"))
            .cloned()
            .unwrap_or_else(|| Answer::error("404 Not Found", "not_found", "no such route"));
        if write_answer(&mut w, &answer).is_err() || answer.chunks.is_some() {
            return;
        }
    }
}

fn write_answer(w: &mut UnixStream, a: &Answer) -> std::io::Result<()> {
    match &a.chunks {
        None => {
            write!(
                w,
                "HTTP/1.1 {}\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
                a.status,
                a.content_type,
                a.body.len()
            )?;
            w.write_all(&a.body)
        }
        Some(pieces) => {
            write!(
                w,
                "HTTP/1.1 {}\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\n\r\n",
                a.status, a.content_type
            )?;
            for p in pieces {
                write!(w, "{:x}\r\n", p.len())?;
                w.write_all(p)?;
                w.write_all(b"\r\n")?;
                w.flush()?;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            w.write_all(b"0\r\n\r\n")
        }
    }
}
