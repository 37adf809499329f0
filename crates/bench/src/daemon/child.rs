//! The daemon under test: `weir run` as a child with its own state
//! directory and socket, ready once `weir status` answers through the
//! socket, stopped by SIGTERM (and judged by its exit status) or killed.
//! Never left behind: drop kills and reaps it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, kill_process};

use crate::storm::cpu;

/// A running `weir run`.
pub(crate) struct Daemon {
    child: Option<Child>,
    weir: PathBuf,
    socket: PathBuf,
}

impl Daemon {
    /// Starts `weir run` over `state` on `socket` and waits until it answers
    /// `weir status` (at most `timeout`). Its stderr goes to `stderr_file`,
    /// so that a failure can be read afterwards without flooding the
    /// benchmark's output.
    pub(crate) fn start(
        weir: &Path,
        state: &Path,
        socket: &Path,
        stderr_file: &Path,
        timeout: Duration,
    ) -> Result<Daemon> {
        Self::start_with(weir, state, socket, stderr_file, timeout, &[])
    }

    /// [`Daemon::start`] with more `weir run` flags (`run_args`).
    pub(crate) fn start_with(
        weir: &Path,
        state: &Path,
        socket: &Path,
        stderr_file: &Path,
        timeout: Duration,
        run_args: &[String],
    ) -> Result<Daemon> {
        let err = std::fs::File::create(stderr_file)
            .with_context(|| format!("create {}", stderr_file.display()))?;
        let child = Command::new(weir)
            .arg("run")
            .arg("--state-dir")
            .arg(state)
            .arg("--socket")
            .arg(socket)
            .args(run_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .context("start weir run")?;
        let mut d = Daemon {
            child: Some(child),
            weir: weir.to_path_buf(),
            socket: socket.to_path_buf(),
        };
        let t = Instant::now();
        loop {
            if let Some(st) = d.child_mut()?.try_wait()? {
                bail!(
                    "weir run exited before it answered ({st}); its log: {}",
                    tail_of(stderr_file)
                );
            }
            let ok = d
                .cli(&["status", "--json"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Ok(d);
            }
            if t.elapsed() > timeout {
                bail!(
                    "weir run did not answer within {timeout:?}; its log: {}",
                    tail_of(stderr_file)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn child_mut(&mut self) -> Result<&mut Child> {
        self.child.as_mut().context("the daemon is gone")
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The socket it listens on.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// CPU time the daemon has used so far, ns.
    pub(crate) fn cpu_ns(&self) -> Result<u64> {
        Ok(cpu::stat_times(Some(self.pid()))?.own_ns)
    }

    /// `weir --socket SOCKET ARGS`: a client of this daemon.
    pub(crate) fn cli(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.weir);
        c.arg("--socket").arg(&self.socket).args(args);
        c
    }

    /// SIGTERM; fails unless it exits 0 within 30 s.
    pub(crate) fn stop(mut self) -> Result<()> {
        let mut child = self.child.take().context("the daemon is gone")?;
        kill_process(Pid::from_child(&child), Signal::TERM).context("kill -TERM weir run")?;
        let t = Instant::now();
        loop {
            if let Some(st) = child.try_wait()? {
                if !st.success() {
                    bail!("weir run ended with {st} after SIGTERM");
                }
                return Ok(());
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                bail!("weir run did not exit within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The last lines of a child's stderr file, for an error message.
fn tail_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join(" | ")
}
