//! The body of `GET /v1/log/records`: records read from the stream's own
//! `weir_log::Reader`, rendered as lines and sent in chunks; with
//! `follow=true`, it then waits for commits and sends what is new.
//!
//! No thread is parked per stream: a caught-up stream awaits the commit
//! notifier's `watch` ([`super::commits`]) and, on waking, reads from its
//! reader (memory and page cache) on the server's threads. Each stream
//! reads the log in order from its own position, so it sees every record
//! once, in order. A follow stream ends when the server stops
//! ([`super::context::Ctx::stop_streams`]) or the client goes away (the
//! body is dropped).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::watch;
use weir_log::{Reader, TypeMask};
use weir_view::record::{record_json, record_line};

use super::context::{Ctx, FollowerGuard};
use super::query::Format;

/// A chunk is sent once it holds this many bytes (or the reader has
/// caught up): large enough to amortize writes, small enough to stream.
const CHUNK: usize = 64 * 1024;

/// A caught-up stream looks again this often even without a notice from
/// the notifier (a safety net, and the only wake-up if it failed to
/// start).
const RECHECK: Duration = Duration::from_secs(1);

/// Where a stream reads and how it shows records.
pub(crate) struct Tail {
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) reader: Reader,
    pub(crate) mask: Option<TypeMask>,
    pub(crate) format: Format,
    /// Records still to send; `None`: no limit.
    pub(crate) remaining: Option<u64>,
    /// Keep waiting for new records once caught up.
    pub(crate) follow: Option<FollowerGuard>,
    /// Started at the oldest record without an explicit `from`: if that
    /// segment is collected before the first read, start at the new oldest.
    pub(crate) chase_oldest: bool,
}

/// What one step of the stream yields.
type Item = Result<Bytes, weir_log::Error>;

impl Tail {
    /// The stream of chunks.
    pub(crate) fn into_stream(self) -> impl Stream<Item = Item> + Send + 'static {
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
                match t.fill(&mut buf) {
                    Err(e) if buf.is_empty() => {
                        tracing::warn!(error = %e, "a record stream failed");
                        return Some((Err(e), None));
                    }
                    // Send what was read; the error comes again next.
                    _ if !buf.is_empty() => {
                        return Some((Ok(Bytes::from(buf)), Some((t, commits, stop))));
                    }
                    _ => {}
                }
                if t.remaining == Some(0) || t.follow.is_none() {
                    return None;
                }
                if !t.wait(&mut commits, &mut stop).await {
                    return None;
                }
            }
        })
    }

    /// Reads and renders records into `buf` until it holds a chunk, the
    /// reader has caught up, or the limit is reached.
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<(), weir_log::Error> {
        while buf.len() < CHUNK && self.remaining != Some(0) {
            let rec = match self.reader.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(()),
                Err(weir_log::Error::Truncated { oldest, .. }) if self.chase_oldest => {
                    self.chase_oldest = false;
                    self.reader = reader(&self.ctx, oldest, self.mask.as_ref());
                    continue;
                }
                Err(e) => return Err(e),
            };
            self.chase_oldest = false;
            let line = match self.format {
                Format::Json => record_json(&rec),
                Format::Text => record_line(&rec),
            };
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
            if let Some(n) = &mut self.remaining {
                *n -= 1;
            }
        }
        Ok(())
    }

    /// Waits until a record past the reader's position is committed.
    /// `false`: the server is stopping.
    async fn wait(
        &self,
        commits: &mut watch::Receiver<u64>,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let pos = self.reader.position();
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

/// A reader of the log from `from`, through `mask`.
pub(crate) fn reader(ctx: &Ctx, from: u64, mask: Option<&TypeMask>) -> Reader {
    let r = ctx.state.log.reader(from);
    match mask {
        Some(m) if !m.is_all() => r.with_mask(m.clone()),
        _ => r,
    }
}
