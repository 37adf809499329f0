//! The state every handler shares: the host's [`ApiState`] plus what the
//! API keeps for itself (render cache, commit notifier, stop signal for
//! follow streams, follower count, request counters).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::watch;

use super::cache::RenderCache;
use super::commits::Notifier;
use super::metrics::HttpCounters;
use super::state::ApiState;

/// The handlers' shared state.
pub(crate) struct Ctx {
    pub(crate) state: Arc<ApiState>,
    /// The daemon's effective uid (privileged for the access rule).
    pub(crate) uid: u32,
    pub(crate) cache: RenderCache,
    /// The last committed index, published by the notifier.
    pub(crate) commits: watch::Receiver<u64>,
    /// Becomes `true` when the server stops: follow streams end.
    pub(crate) stop: watch::Sender<bool>,
    /// Open follow streams.
    pub(crate) followers: AtomicUsize,
    pub(crate) http: HttpCounters,
    /// The commit notifier and its window of rendered lines.
    pub(crate) notifier: Notifier,
}

impl Ctx {
    pub(crate) fn new(state: Arc<ApiState>) -> Arc<Ctx> {
        let (notifier, commits) = Notifier::start(&state.log);
        Arc::new(Ctx {
            state,
            uid: rustix::process::geteuid().as_raw(),
            cache: RenderCache::default(),
            commits,
            stop: watch::channel(false).0,
            followers: AtomicUsize::new(0),
            http: HttpCounters::default(),
            notifier,
        })
    }

    /// Ends every follow stream (at their next wait).
    pub(crate) fn stop_streams(&self) {
        self.stop.send_replace(true);
    }

    /// Counts a new follow stream, unless there are too many: the guard
    /// uncounts it when the stream is dropped.
    pub(crate) fn follower(self: &Arc<Self>) -> Option<FollowerGuard> {
        let max = self.state.limits.max_followers;
        let mut n = self.followers.load(Ordering::Relaxed);
        loop {
            if n >= max {
                return None;
            }
            match self.followers.compare_exchange_weak(
                n,
                n + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(FollowerGuard(self.clone())),
                Err(now) => n = now,
            }
        }
    }
}

/// One counted follow stream.
pub(crate) struct FollowerGuard(Arc<Ctx>);

impl Drop for FollowerGuard {
    fn drop(&mut self) {
        self.0.followers.fetch_sub(1, Ordering::AcqRel);
    }
}
