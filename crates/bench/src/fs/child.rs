//! A watcher process: started with its stderr in a file on the workspace
//! tmpfs (fsnotifywait writes a line there for many events, and draining a
//! pipe would take CPU from the load in this process), reaped by a thread
//! of its own that notes when it exited, and read for its CPU time.
//!
//! The exit time is what tells how far into a round a watcher that quits on
//! a queue overflow (fsnotifywait) got. A child is never left behind: drop
//! kills and reaps it, and removes its stderr file. Signals go by pid only while the reaper has not seen
//! the child exit, so a pid the kernel has given to another process is
//! never signalled.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process, waitid};

use crate::storm::cpu;

/// When and how the child ended, once it has.
type Exit = Option<(Instant, ExitStatus)>;

/// A running watcher process.
pub(crate) struct Proc {
    pid: u32,
    exit: Arc<(Mutex<Exit>, Condvar)>,
    stderr: PathBuf,
    /// What it is, for messages.
    what: String,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
}

impl Proc {
    /// Starts `cmd` (`what` in messages) with its stderr in the file
    /// `stderr`, stdout to /dev/null unless `piped`, and stdin a pipe held
    /// until [`Proc::close_stdin`] if `piped`, else /dev/null.
    pub(crate) fn spawn(mut cmd: Command, what: &str, stderr: &Path, piped: bool) -> Result<Proc> {
        let err = std::fs::File::create(stderr)
            .with_context(|| format!("create {}", stderr.display()))?;
        let io = || if piped { Stdio::piped() } else { Stdio::null() };
        let mut child = cmd
            .stdin(io())
            .stdout(io())
            .stderr(err)
            .spawn()
            .with_context(|| format!("start {what}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let pid = child.id();
        let exit: Arc<(Mutex<Exit>, Condvar)> = Arc::new((Mutex::new(None), Condvar::new()));
        let e = exit.clone();
        std::thread::Builder::new()
            .name("fs-reaper".into())
            .spawn(move || {
                // Seen exited first, not reaped (WNOWAIT): the pid stays
                // ours until the exit is recorded under the lock that
                // `signal` holds, so no recycled pid is ever signalled.
                let rpid = Pid::from_raw(pid as i32);
                if let Some(rpid) = rpid {
                    let nowait = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                    while let Err(rustix::io::Errno::INTR) = waitid(WaitId::Pid(rpid), nowait) {}
                }
                let (lock, cv) = &*e;
                let mut slot = lock.lock().unwrap_or_else(|p| p.into_inner());
                let st = child
                    .wait()
                    // A wait that fails (it cannot, for our own child)
                    // counts as an exit now, so nothing waits for ever.
                    .unwrap_or_else(|_| std::os::unix::process::ExitStatusExt::from_raw(-1));
                *slot = Some((Instant::now(), st));
                cv.notify_all();
            })
            .context("spawn a reaper thread")?;
        Ok(Proc {
            pid,
            exit,
            stderr: stderr.to_path_buf(),
            what: what.to_owned(),
            stdin,
            stdout,
        })
    }

    /// Its pid, for `/proc` (read only while it has not been seen exited).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// When and how it exited, if it has.
    pub(crate) fn exited(&self) -> Exit {
        *self.exit.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits up to `limit` for it to exit.
    pub(crate) fn wait_exit(&self, limit: Duration) -> Exit {
        let (lock, cv) = &*self.exit;
        let g = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (g, _) = cv
            .wait_timeout_while(g, limit, |e| e.is_none())
            .unwrap_or_else(|p| p.into_inner());
        *g
    }

    /// Sends `sig` unless it has exited.
    pub(crate) fn signal(&self, sig: Signal) -> Result<()> {
        // Held across the kill: the reaper reaps only under this lock.
        let g = self.exit.0.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_some() {
            return Ok(());
        }
        let pid = Pid::from_raw(self.pid as i32).context("a child's pid is positive")?;
        match kill_process(pid, sig) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("kill -{sig:?} {}", self.what)),
        }
    }

    /// Closes its stdin (the floor reader's stop).
    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Its stdout, if piped; once.
    pub(crate) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// Its stderr so far.
    pub(crate) fn stderr_text(&self) -> String {
        std::fs::read(&self.stderr)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The last line of its stderr that is not `skip`, for messages.
    pub(crate) fn last_words(&self, skip: &str) -> String {
        let text = self.stderr_text();
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty() && (skip.is_empty() || !l.contains(skip)))
            .unwrap_or("")
            .trim()
            .to_owned()
    }

    /// Waits until a line of its stderr satisfies `ready`, at most `limit`;
    /// fails, with its last words, if it exits first or takes longer.
    pub(crate) fn wait_ready(&self, ready: impl Fn(&str) -> bool, limit: Duration) -> Result<()> {
        self.wait_line(ready, Instant::now(), limit, Duration::from_millis(1))
            .map(drop)
    }

    /// As [`Proc::wait_ready`], looking every `poll`, with `limit` counted
    /// from `since`; the line.
    pub(crate) fn wait_line(
        &self,
        ready: impl Fn(&str) -> bool,
        since: Instant,
        limit: Duration,
        poll: Duration,
    ) -> Result<String> {
        loop {
            if let Some(l) = self.stderr_text().lines().find(|l| ready(l)) {
                return Ok(l.to_owned());
            }
            if let Some((_, st)) = self.exited() {
                bail!(
                    "{} exited before it was ready ({st}): {}",
                    self.what,
                    self.last_words("")
                );
            }
            if since.elapsed() > limit {
                bail!(
                    "{} not ready after {} s: {}",
                    self.what,
                    limit.as_secs(),
                    self.last_words("")
                );
            }
            std::thread::sleep(poll);
        }
    }

    /// Its CPU so far, every thread (see [`CpuMark`]).
    pub(crate) fn cpu(&self) -> Result<CpuMark> {
        CpuMark::read(self.pid)
    }

    /// SIGTERM, then waits up to `limit`, then SIGKILL; returns how it
    /// ended, or `None` if it had to be killed.
    pub(crate) fn terminate(&self, limit: Duration) -> Result<Option<ExitStatus>> {
        self.signal(Signal::TERM)?;
        if let Some((_, st)) = self.wait_exit(limit) {
            return Ok(Some(st));
        }
        self.signal(Signal::KILL)?;
        self.wait_exit(Duration::from_secs(5));
        Ok(None)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stdin = None;
        if self.exited().is_none() {
            let _ = self.signal(Signal::CONT);
            let _ = self.signal(Signal::KILL);
            self.wait_exit(Duration::from_secs(5));
        }
        // fsnotifywait writes megabytes there in a round; what a report
        // needs of it was read before.
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// A process's CPU time at one instant: every live thread's scheduler
/// runtime (ns, from `/proc/PID/task/*/schedstat`) and the process total
/// of `/proc/PID/stat` (utime + stime, every thread, those that exited
/// included, in 10 ms ticks).
#[derive(Clone, Debug)]
pub(crate) struct CpuMark {
    threads: BTreeMap<u32, u64>,
    stat_ns: u64,
}

impl CpuMark {
    pub(crate) fn read(pid: u32) -> Result<CpuMark> {
        // Threads first: the total read after covers at least as much.
        let threads = cpu::per_thread_ns(pid)?;
        let stat_ns = cpu::stat_times(Some(pid))?.own_ns;
        Ok(CpuMark { threads, stat_ns })
    }

    /// The CPU ns from `earlier` to this mark. Exact (the threads' runtimes)
    /// when every thread of `earlier` is still there, since a thread that
    /// started in between ran only in between; otherwise a thread's time
    /// left the sum with it, and the `/proc/PID/stat` totals (which keep
    /// it, in 10 ms ticks) are used. The second value says which.
    pub(crate) fn since(&self, earlier: &CpuMark) -> (u64, bool) {
        if earlier.threads.keys().all(|t| self.threads.contains_key(t)) {
            let ns = self
                .threads
                .iter()
                .map(|(t, &ns)| ns.saturating_sub(earlier.threads.get(t).copied().unwrap_or(0)))
                .sum();
            (ns, true)
        } else {
            (self.stat_ns.saturating_sub(earlier.stat_ns), false)
        }
    }
}

/// How long a watcher may take to go idle after a round's load.
const SETTLE_LIMIT: Duration = Duration::from_secs(10);

/// Waits until `p` uses less than 0.2 ms of CPU in 20 ms (it has read and
/// handled what the load made), or exits; returns the seconds it took.
pub(crate) fn settle(p: &Proc) -> Result<f64> {
    let t = Instant::now();
    let mut last = p.cpu()?;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if p.exited().is_some() {
            break;
        }
        let Ok(now) = p.cpu() else {
            // Gone between the check and the read.
            break;
        };
        if now.since(&last).0 < 200_000 {
            break;
        }
        if t.elapsed() > SETTLE_LIMIT {
            bail!("still busy {} s after the load", SETTLE_LIMIT.as_secs());
        }
        last = now;
    }
    Ok(t.elapsed().as_secs_f64())
}
