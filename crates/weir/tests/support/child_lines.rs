//! A long-running child under test: its output pipes as lines that
//! arrive on a channel, waits for a line or for its exit bounded by a
//! deadline (never a fixed sleep), and a guard that kills the child if the
//! test fails first.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The lines of a child's pipe, as they come; the channel closes with the
/// pipe.
pub(crate) fn lines_of(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads lines into `seen` until one satisfies `want`, for at most
/// `timeout`; returns that line. `what` names it in the failure.
pub(crate) fn wait_line(
    rx: &mpsc::Receiver<String>,
    seen: &mut Vec<String>,
    timeout: Duration,
    what: &str,
    want: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push(line.clone());
                if want(&line) {
                    return line;
                }
            }
            Err(e) => panic!("{what}: {e} after {timeout:?}; lines so far:\n{seen:#?}"),
        }
    }
}

/// A child that is killed (and reaped) on drop if it still runs.
pub(crate) struct Reap(pub(crate) Child);

impl Reap {
    /// Waits for the child to exit, up to `timeout`; fails the test, after
    /// killing it, if it does not.
    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.0.try_wait().expect("wait for the child") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.0.kill();
                panic!("the child did not exit within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Reap {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
