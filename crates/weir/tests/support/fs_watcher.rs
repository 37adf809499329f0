//! A running `weir fs watch` as a child of a test: started on a state
//! directory and a root, ready once its "watching" line (and, when asked,
//! its "read" line) is on stderr, signalled, stopped with SIGTERM (which
//! logs everything before it) or killed; killed on drop.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

/// A running `weir fs watch`, killed on drop.
pub(crate) struct Watcher(std::process::Child);

impl Watcher {
    /// Starts it and waits for its "watching" line (marks placed, trees
    /// read and, after a kill, reconciled).
    pub(crate) fn start(state: &Path, root: &Path) -> Watcher {
        Watcher::start_with(state, root, &[], true)
    }

    /// Starts it (weir's options `pre` before the command) and waits for
    /// its "watching" line (the marks placed) and, with `read`, for its
    /// tree read too: a tree too big to read before that line has a
    /// `weir: read` line after it.
    pub(crate) fn start_with(state: &Path, root: &Path, pre: &[&OsStr], read: bool) -> Watcher {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(pre)
            .arg("--state-dir")
            .arg(state)
            .args(["fs", "watch", "--quiet"])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weir fs watch");
        let err = child.stderr.take().expect("stderr");
        let mut r = std::io::BufReader::new(err);
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            let n = std::io::BufRead::read_line(&mut r, &mut line).expect("read stderr");
            assert!(n > 0, "weir fs watch ended before it was ready:\n{seen}");
            seen.push_str(&line);
            let read_later =
                line.starts_with("weir: watching") && line.contains("reading the tree");
            if line.starts_with("weir: watching") && !(read && read_later) {
                break;
            }
            if line.starts_with("weir: read ") {
                break;
            }
        }
        // Keep draining stderr so the child never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
        Watcher(child)
    }

    pub(crate) fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.0);
        rustix::process::kill_process(pid, sig).expect("signal the watcher");
    }

    /// SIGTERM, then its exit status must be success: the stop logs
    /// everything before it.
    pub(crate) fn stop(mut self) {
        self.signal(rustix::process::Signal::TERM);
        let st = self.0.wait().expect("wait");
        assert!(st.success(), "weir fs watch exited with {st}");
    }

    /// SIGKILL, and the exit reaped.
    #[allow(dead_code)]
    pub(crate) fn kill(mut self) {
        self.signal(rustix::process::Signal::KILL);
        let _ = self.0.wait();
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
