//! The `weir ... watch` children: `weir mounts watch` of the overflow test
//! and `weir devices watch` of `lvm`, started with their own state
//! directory, stopped and continued by signal, and never left behind: on
//! drop a child is continued (a stopped process cannot act on SIGTERM),
//! killed and reaped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, kill_process};

/// The `weir` binary built next to this one, or why there is none.
pub(crate) fn find_weir() -> std::result::Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let w = exe.with_file_name("weir");
    if w.is_file() {
        Ok(w)
    } else {
        Err(format!(
            "{} not found (build it: cargo build -p weir, same profile)",
            w.display()
        ))
    }
}

/// The watcher child; continued, killed and reaped on drop.
pub(crate) struct Watch {
    child: Child,
    pid: Pid,
    /// What it is, for messages: `weir mounts watch`.
    what: String,
}

impl Watch {
    pub(crate) fn start(weir: &Path, state: &Path) -> Result<Watch> {
        let mut cmd = Command::new(weir);
        cmd.arg("--state-dir")
            .arg(state)
            .args(["mounts", "watch", "--backend", "fanotify"])
            // One line per change; 40,000 of them are not worth keeping.
            .stdout(Stdio::null());
        Watch::spawn(cmd, "weir mounts watch", None)
    }

    /// Starts `cmd`, called `what` in messages, with stdin closed and stdout
    /// as `cmd` sets it. Its stderr passes through, marked, as it writes it;
    /// each line also goes to `stderr_lines` if given.
    pub(crate) fn spawn(
        mut cmd: Command,
        what: &str,
        stderr_lines: Option<Sender<String>>,
    ) -> Result<Watch> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {what}"))?;
        if let Some(err) = child.stderr.take() {
            let mark = what.to_owned();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    eprintln!("    [{mark}] {line}");
                    if let Some(tx) = &stderr_lines {
                        // The receiver may be gone; the lines still pass through.
                        let _ = tx.send(line);
                    }
                }
            });
        }
        let pid = Pid::from_child(&child);
        Ok(Watch {
            child,
            pid,
            what: what.to_owned(),
        })
    }

    /// The child's stdout, if `cmd` piped it; once.
    pub(crate) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub(crate) fn signal(&self, sig: Signal) -> Result<()> {
        kill_process(self.pid, sig).with_context(|| format!("kill -{sig:?} {}", self.pid))
    }

    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the child has exited.
    pub(crate) fn alive(&mut self) -> Result<()> {
        if let Some(st) = self.child.try_wait()? {
            bail!("{} exited early ({st})", self.what);
        }
        Ok(())
    }

    /// Whether the child is stopped (state `T` in `/proc/<pid>/stat`).
    pub(crate) fn stopped(&self) -> Result<bool> {
        let s = std::fs::read_to_string(format!("/proc/{}/stat", self.id()))?;
        Ok(s.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T')))
    }

    /// SIGTERM, then SIGKILL if it lingers.
    pub(crate) fn stop(mut self) -> Result<()> {
        self.signal(Signal::TERM)?;
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Some(st) = self.child.try_wait()? {
                if !st.success() {
                    bail!("{} ended with {st}", self.what);
                }
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("{} did not stop within 10 s of SIGTERM", self.what)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = kill_process(self.pid, Signal::CONT);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
