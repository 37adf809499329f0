//! The commit notifier: one thread waits on the log's commits and
//! publishes the committed index on a `tokio::sync::watch`, so that any
//! number of follow streams wait on it asynchronously instead of each
//! parking a thread in `Reader::wait`. A woken stream reads what is new
//! from its own reader.
//!
//! The thread holds the log only weakly, and only between two waits, so
//! that it never keeps the log alive; it ends when its handle is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;
use weir_log::Log;

/// The longest the thread sleeps without looking at its stop flag. A
/// commit wakes it at once.
const POLL: Duration = Duration::from_millis(50);

/// The running notifier; dropping it stops the thread (within [`POLL`]).
pub(crate) struct Notifier {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Notifier {
    /// Starts the thread. Its receiver always holds the last committed
    /// index seen. If the thread cannot start, the receiver never changes
    /// and streams fall back on their own periodic look (see
    /// `records::follow`).
    pub(crate) fn start(log: &Arc<Log>) -> (Notifier, watch::Receiver<u64>) {
        let (tx, rx) = watch::channel(log.last_index());
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(log);
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("weir-api-commits".into())
            .spawn(move || run(&weak, &tx, &flag))
            .map_err(|e| tracing::error!(error = %e, "cannot start the API's commit notifier; follow streams will poll"))
            .ok();
        (Notifier { stop, thread }, rx)
    }
}

fn run(log: &Weak<Log>, tx: &watch::Sender<u64>, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        let Some(log) = log.upgrade() else {
            return;
        };
        let last = log.last_index();
        tx.send_if_modified(|v| {
            let changed = *v != last;
            *v = last;
            changed
        });
        // A reader past the end waits for the next commit; it holds the
        // log's shared state, not the `Log`, so it does not keep the log
        // open.
        let waiter = log.reader(last + 1);
        drop(log);
        waiter.wait(POLL);
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_log::{Options, Record, RecordType};

    #[tokio::test]
    async fn publishes_commits_and_lets_the_log_go() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(Log::open(dir.path(), Options::default()).unwrap());
        let (n, mut rx) = Notifier::start(&log);
        assert_eq!(*rx.borrow(), 0);
        for _ in 0..3 {
            let _ = log.append(&Record::new(RecordType::MARK)).unwrap();
        }
        let seen = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|&i| i >= 3))
            .await
            .expect("the notifier publishes the commit")
            .map(|v| *v)
            .unwrap();
        assert_eq!(seen, 3);
        drop(n);
        // The thread is gone, and held no strong reference.
        let log = Arc::try_unwrap(log).expect("the notifier keeps no reference");
        log.close().unwrap();
    }
}
