//! The commit notifier: one thread reads every newly committed record once
//! with its own reader, renders it ([`super::window::Line`]), publishes
//! it in the shared [`Window`] and then its index on a
//! `tokio::sync::watch`, so that any number of follow streams wait on the
//! watch asynchronously (instead of each parking a thread in
//! `Reader::wait`) and copy their lines from the window instead of each
//! decoding and rendering every record.
//!
//! The published index is always the window's last: a stream woken for
//! index `i` finds it in the window (unless it was already dropped).
//!
//! The thread never holds the `Log` itself: its reader holds only the
//! log's shared state, and the log is borrowed (weakly) only to start a
//! new reader. It ends when its handle is dropped or the log is gone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;
use weir_log::{Log, Reader};

use super::window::{Line, Window};

/// The longest the thread sleeps without looking at its stop flag. A
/// commit wakes it at once.
const POLL: Duration = Duration::from_millis(50);

/// Records rendered between two publications while catching up, so that
/// followers get the first lines of a burst early.
const BATCH: usize = 1024;

/// The running notifier; dropping it stops the thread (within [`POLL`]).
pub(crate) struct Notifier {
    stop: Arc<AtomicBool>,
    window: Arc<Window>,
    thread: Option<JoinHandle<()>>,
}

impl Notifier {
    /// Starts the thread. Its receiver always holds the last index in the
    /// window. If the thread cannot start, the window stays empty and
    /// halted, the receiver never changes, and streams read the log
    /// themselves on their own periodic look (see `tail`).
    pub(crate) fn start(log: &Arc<Log>) -> (Notifier, watch::Receiver<u64>) {
        let last = log.last_index();
        let (tx, rx) = watch::channel(last);
        let window = Arc::new(Window::new(last + 1));
        let reader = log.reader(last + 1);
        let stop = Arc::new(AtomicBool::new(false));
        let weak = Arc::downgrade(log);
        let (flag, win) = (stop.clone(), window.clone());
        let thread = std::thread::Builder::new()
            .name("weir-api-commits".into())
            .spawn(move || run(&weak, reader, &win, &tx, &flag))
            .map_err(|e| {
                window.set_halted(true);
                tracing::error!(error = %e, "cannot start the API's commit notifier; follow streams will poll");
            })
            .ok();
        (
            Notifier {
                stop,
                window,
                thread,
            },
            rx,
        )
    }

    /// The window the thread fills.
    pub(crate) fn window(&self) -> &Arc<Window> {
        &self.window
    }
}

fn run(
    log: &Weak<Log>,
    mut reader: Reader,
    window: &Window,
    tx: &watch::Sender<u64>,
    stop: &AtomicBool,
) {
    let mut failing = false;
    while !stop.load(Ordering::Acquire) && log.strong_count() > 0 {
        match feed(&mut reader, window, tx) {
            Ok(()) => {
                if failing {
                    tracing::info!("the API's commit notifier reads the log again");
                    failing = false;
                    window.set_halted(false);
                }
                // A reader past the end waits for the next commit.
                reader.wait(POLL);
            }
            // Retention took records before they were read: start again at
            // the oldest. Streams before it meet the same error themselves.
            Err(weir_log::Error::Truncated { oldest, .. }) => {
                let Some(l) = log.upgrade() else { break };
                reader = l.reader(oldest);
                drop(l);
                window.restart(oldest);
                // Wake the streams waiting before it, so that they meet
                // the error now rather than at their next recheck.
                publish(tx, oldest.saturating_sub(1));
            }
            // A damaged log: streams read it themselves (and report the
            // error) until the notifier can go on.
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %weir_view::chain::error_chain(&e), "the API's commit notifier cannot read the log");
                    failing = true;
                    window.set_halted(true);
                }
                std::thread::sleep(POLL);
            }
        }
    }
    window.set_halted(true);
}

/// Renders and publishes everything committed since the last call.
fn feed(
    reader: &mut Reader,
    window: &Window,
    tx: &watch::Sender<u64>,
) -> Result<(), weir_log::Error> {
    loop {
        let mut batch = Vec::new();
        let mut failed = None;
        while batch.len() < BATCH {
            match reader.next_record() {
                Ok(Some(r)) => batch.push(Line::new(r)),
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let full = batch.len() == BATCH;
        if !batch.is_empty() {
            publish(tx, window.push(batch));
        }
        if let Some(e) = failed {
            return Err(e);
        }
        if !full {
            return Ok(());
        }
    }
}

/// Publishes `last` as the window's last index, never going back.
fn publish(tx: &watch::Sender<u64>, last: u64) {
    tx.send_if_modified(|v| {
        let changed = last > *v;
        *v = (*v).max(last);
        changed
    });
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
    use crate::api::query::Format;
    use crate::api::window::{Pass, Take};
    use weir_log::{Options, Record, RecordType};

    #[tokio::test]
    async fn publishes_commits_and_lets_the_log_go() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(Log::open(dir.path(), Options::default()).unwrap());
        let _ = log.append(&Record::new(RecordType::MKDIR)).unwrap();
        while log.last_index() < 1 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let first = 2;
        let (n, mut rx) = Notifier::start(&log);
        for _ in 0..3 {
            let _ = log.append(&Record::new(RecordType::MARK)).unwrap();
        }
        let want = first + 2;
        let seen = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|&i| i >= want))
            .await
            .expect("the notifier publishes the commit")
            .map(|v| *v)
            .unwrap();
        assert_eq!(seen, want);
        // The window holds exactly the records committed after the start,
        // rendered once.
        let mut out = Vec::new();
        let w = n.window().clone();
        assert_eq!(
            w.take(first - 1, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Behind
        );
        assert_eq!(
            w.take(first, &Pass::ALL, Format::Json, &mut out, 1 << 20, None),
            Take::Took {
                next: want + 1,
                taken: 3
            }
        );
        let want_lines: String = log
            .reader(first)
            .map(|r| format!("{}\n", weir_view::record::record_json(&r.unwrap())))
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), want_lines);
        drop(n);
        // The thread is gone, and held no strong reference.
        assert_eq!(
            w.take(
                want + 1,
                &Pass::ALL,
                Format::Json,
                &mut Vec::new(),
                1 << 20,
                None
            ),
            Take::AtEnd { halted: true }
        );
        let log = Arc::try_unwrap(log).expect("the notifier keeps no reference");
        log.close().unwrap();
    }
}
