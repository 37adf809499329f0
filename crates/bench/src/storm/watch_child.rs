//! The `weir mounts watch` child of the overflow test: started with its
//! own state directory, stopped and continued by signal, and never left
//! behind: on drop it is continued (a stopped process cannot act on
//! SIGTERM), killed and reaped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, kill_process};

/// The watcher child; continued, killed and reaped on drop.
pub(crate) struct Watch {
    child: Child,
    pid: Pid,
}

impl Watch {
    pub(crate) fn start(weir: &Path, state: &Path) -> Result<Watch> {
        let mut child = Command::new(weir)
            .arg("--state-dir")
            .arg(state)
            .args(["mounts", "watch", "--backend", "fanotify"])
            .stdin(Stdio::null())
            // One line per change; 40,000 of them are not worth keeping.
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("start {} mounts watch", weir.display()))?;
        // Its diagnostics pass through, marked, as it writes them.
        if let Some(err) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    eprintln!("    [weir mounts watch] {line}");
                }
            });
        }
        let pid = Pid::from_child(&child);
        Ok(Watch { child, pid })
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
            bail!("weir mounts watch exited early ({st})");
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
                    bail!("weir mounts watch ended with {st}");
                }
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("weir mounts watch did not stop within 10 s of SIGTERM")
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
