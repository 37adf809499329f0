//! [`LineStream`]: an answer read line by line as it arrives, for the log's
//! `follow=true` stream, which stays open until the daemon stops.
//!
//! Each wait for data is bounded, so the caller can look at a stop flag
//! (SIGINT) between lines and flush its output when the stream goes quiet.
//! A line is bounded too ([`MAX_LINE`]): the daemon is trusted to send
//! records, not to hold the client's memory hostage.

use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::runtime::Runtime;

use crate::error::{self, Aborted, Error};

/// The longest line accepted, without its newline. A record frame is at
/// most 1 MiB, and its JSON form shows each byte in at most 4 characters.
pub const MAX_LINE: usize = 16 << 20;

/// What [`LineStream::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<'a> {
    /// A whole line, without its `\n`.
    Line(&'a [u8]),
    /// No whole line arrived within the wait.
    Idle,
    /// The answer ended (after a last `\n`) without an error trailer.
    End,
}

/// An answer being read line by line. It borrows its [`crate::Client`],
/// whose connection it occupies until dropped.
pub struct LineStream<'c> {
    rt: &'c Runtime,
    body: Incoming,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    start: usize,
    /// How much of the unread part is known to hold no `\n`.
    scanned: usize,
    ended: bool,
    /// The error the answer's trailer reported ([`Error::Aborted`]),
    /// returned once every whole line before it has been, and by every
    /// call after.
    failed: Option<Aborted>,
    /// The body broke off ([`Error::Http`]); every later call returns
    /// [`Error::Broken`] rather than taking what hyper then reports, an
    /// end, for a clean one.
    broken: bool,
}

impl std::fmt::Debug for LineStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineStream")
            .field("buffered", &(self.buf.len() - self.start))
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<'c> LineStream<'c> {
    pub(crate) fn new(rt: &'c Runtime, body: Incoming) -> LineStream<'c> {
        LineStream {
            rt,
            body,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            ended: false,
            failed: None,
            broken: false,
        }
    }

    /// The next line, waiting at most `wait` for more of the answer.
    pub fn next(&mut self, wait: Duration) -> Result<Next<'_>, Error> {
        if self.broken {
            return Err(Error::Broken);
        }
        loop {
            let from = self.start + self.scanned;
            if let Some(pos) = self.buf[from..].iter().position(|&b| b == b'\n') {
                let (s, e) = (self.start, from + pos);
                self.start = e + 1;
                self.scanned = 0;
                return Ok(Next::Line(&self.buf[s..e]));
            }
            self.scanned = self.buf.len() - self.start;
            if self.scanned > MAX_LINE {
                return Err(Error::LineTooLong { limit: MAX_LINE });
            }
            if self.ended {
                if let Some(e) = &self.failed {
                    // What is left is not a line. The stream is over, and
                    // each later call says so again, rather than `End`.
                    self.buf.clear();
                    self.start = 0;
                    self.scanned = 0;
                    return Err(e.to_error());
                }
                return match self.scanned {
                    0 => Ok(Next::End),
                    _ => Err(Error::Truncated),
                };
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            // The timer must be made inside the runtime, hence the block.
            let body = &mut self.body;
            let got = self
                .rt
                .block_on(async { tokio::time::timeout(wait, body.frame()).await });
            match got {
                Err(_) => return Ok(Next::Idle),
                Ok(None) => self.ended = true,
                Ok(Some(Err(e))) => {
                    // No whole line is buffered here: each was returned
                    // before this read.
                    self.broken = true;
                    return Err(Error::Http(e));
                }
                Ok(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => self.buf.extend_from_slice(&data),
                    Err(frame) => {
                        if let Some(e) = frame.trailers_ref().and_then(error::from_trailers) {
                            self.failed = Some(e);
                        }
                    }
                },
            }
        }
    }

    /// Whether a whole line is already buffered, so [`LineStream::next`]
    /// returns it without waiting. A caller can flush its output whenever
    /// this is false: everything that arrived has been handed out.
    pub fn pending(&self) -> bool {
        self.buf[self.start..].contains(&b'\n')
    }
}
