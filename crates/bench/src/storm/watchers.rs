//! What watches a storm: nothing, weir (in this process, with either
//! backend and its own log), or `findmnt --poll` (the re-parser reference
//! from the anchor). One more reference, `fanotify-unread`, is a fanotify
//! group marked on the namespace and never read: what the kernel alone
//! charges the mounter for generating the events, the floor of any
//! fanotify watcher's overhead.
//!
//! weir runs in-process so that its threads can be told apart from the
//! driver's by CPU clock (see `cpu`), and so that its table can be compared
//! with the kernel's directly. Each measurement gets a fresh watcher and a
//! fresh log, so one run's backlog never bills the next.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use weir_log::{Log, Options};
use weir_mounts::{Backend, BackendChoice, Tracker, TrackerOptions};
use weir_sys::fanotify::MountWatch;

use super::cpu;
use super::driver::Workspace;

/// Who watches.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, clap::ValueEnum)]
pub(crate) enum Mode {
    None,
    Fanotify,
    Mountinfo,
    Findmnt,
    FanotifyUnread,
}

impl Mode {
    pub(crate) const ALL: [Mode; 5] = [
        Mode::None,
        Mode::Fanotify,
        Mode::Mountinfo,
        Mode::Findmnt,
        Mode::FanotifyUnread,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Fanotify => "fanotify",
            Mode::Mountinfo => "mountinfo",
            Mode::Findmnt => "findmnt",
            Mode::FanotifyUnread => "fanotify-unread",
        }
    }

    /// The weir backend this mode runs, if it runs weir.
    pub(crate) fn backend(self) -> Option<Backend> {
        match self {
            Mode::Fanotify => Some(Backend::Fanotify),
            Mode::Mountinfo => Some(Backend::Mountinfo),
            _ => None,
        }
    }
}

/// A CPU counter is "still" when it grew by less than this over a window:
/// the log's committer wakes for maintenance now and then, for microseconds.
const STILL_NS: u64 = 1_000_000;

/// weir's window: once a storm ends, its last whole-table reading waits for
/// 20 ms of quiet and for the budget (its own cost over the 5% share: about
/// 0.4 s at 10,000 mounts), so 2.2 s without CPU means it has run.
pub(crate) const WEIR_STILL: Duration = Duration::from_millis(2200);
/// findmnt re-reads as soon as poll(2) wakes it; once idle it is done.
const FINDMNT_STILL: Duration = Duration::from_millis(500);
/// The longest any watcher may take to catch up after a storm.
const SETTLE_LIMIT: Duration = Duration::from_secs(120);

/// weir, tracking into its own log.
pub(crate) struct Weir {
    pub(crate) tracker: Tracker,
    pub(crate) log: Arc<Log>,
    dir: PathBuf,
}

impl Weir {
    /// Starts a tracker with `backend` and a fresh log, with the library's
    /// default options (what `weir mounts watch` runs), and syncs it: what
    /// the start left to do is done before any clock runs.
    pub(crate) fn start(ws: &Workspace, backend: Backend, name: &str) -> Result<Weir> {
        let dir = ws.log_dir(name)?;
        let log = Arc::new(Log::open(&dir, Options::default())?);
        let choice = match backend {
            Backend::Fanotify => BackendChoice::Fanotify,
            Backend::Mountinfo => BackendChoice::Mountinfo,
        };
        let opts = TrackerOptions {
            backend: choice,
            ..TrackerOptions::default()
        };
        let tracker = Tracker::start(Some(log.clone()), opts, None)
            .with_context(|| format!("start a {backend} tracker"))?;
        tracker.sync()?;
        Ok(Weir { tracker, log, dir })
    }

    /// Stops the tracker, closes the log durably and removes it.
    pub(crate) fn stop(self) -> Result<()> {
        self.tracker
            .stop()
            .context("the tracker ended with an error")?;
        let log = Arc::try_unwrap(self.log)
            .map_err(|_| anyhow::anyhow!("the log is still shared after the tracker stopped"))?;
        log.close()?;
        std::fs::remove_dir_all(&self.dir)?;
        Ok(())
    }
}

/// `findmnt --poll`, its output thrown away.
pub(crate) struct Findmnt {
    child: Child,
}

impl Findmnt {
    fn start(tool: &Path) -> Result<Findmnt> {
        let child = Command::new(tool)
            .arg("--poll")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("start {} --poll", tool.display()))?;
        let f = Findmnt { child };
        // It reads the whole table before it polls; a mount made before
        // that would go unseen.
        wait_still(|| f.cpu_ns(), Duration::from_millis(200))?;
        Ok(f)
    }

    fn cpu_ns(&self) -> Result<u64> {
        cpu::process_ns(self.child.id())
    }
}

impl Drop for Findmnt {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The watcher of one measurement.
pub(crate) enum Watcher {
    None,
    Weir(Weir),
    Findmnt(Findmnt),
    /// Held open, never read.
    Unread {
        _group: MountWatch,
    },
}

impl Watcher {
    /// Starts the watcher of `mode`; `tag` names its log.
    pub(crate) fn start(mode: Mode, ws: &Workspace, findmnt: &Path, tag: &str) -> Result<Watcher> {
        Ok(match mode {
            Mode::None => Watcher::None,
            Mode::Findmnt => Watcher::Findmnt(Findmnt::start(findmnt)?),
            Mode::FanotifyUnread => Watcher::Unread {
                _group: MountWatch::open()?,
            },
            Mode::Fanotify | Mode::Mountinfo => {
                let backend = mode.backend().context("a weir mode has a backend")?;
                Watcher::Weir(Weir::start(ws, backend, tag)?)
            }
        })
    }

    /// weir, if this is weir.
    pub(crate) fn weir(&self) -> Option<&Weir> {
        match self {
            Watcher::Weir(w) => Some(w),
            _ => None,
        }
    }

    /// The watcher's CPU ns so far: weir's threads, or findmnt's process.
    pub(crate) fn cpu_ns(&self) -> Result<u64> {
        match self {
            Watcher::None | Watcher::Unread { .. } => Ok(0),
            Watcher::Weir(_) => Ok(cpu::others_ns()),
            Watcher::Findmnt(f) => f.cpu_ns(),
        }
    }

    /// Waits until the watcher has caught up with the storm: for weir, its
    /// table holds `expected` mounts and it has used no CPU for a while;
    /// for findmnt, it has used no CPU for a while. Returns the seconds it
    /// took, so the report can say how far behind the watcher was.
    pub(crate) fn settle(&self, expected: usize) -> Result<f64> {
        let t = Instant::now();
        match self {
            Watcher::None | Watcher::Unread { .. } => {}
            Watcher::Weir(w) => {
                while w.tracker.len() != expected {
                    if t.elapsed() > SETTLE_LIMIT {
                        bail!(
                            "the {} tracker holds {} mounts, not {expected}, {} s after the storm",
                            w.tracker.backend(),
                            w.tracker.len(),
                            SETTLE_LIMIT.as_secs()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                wait_still(|| Ok(cpu::others_ns()), WEIR_STILL)?;
            }
            Watcher::Findmnt(f) => wait_still(|| f.cpu_ns(), FINDMNT_STILL)?,
        }
        Ok(t.elapsed().as_secs_f64())
    }

    /// Stops the watcher.
    pub(crate) fn stop(self) -> Result<()> {
        match self {
            Watcher::Weir(w) => w.stop(),
            Watcher::None | Watcher::Findmnt(_) | Watcher::Unread { .. } => Ok(()),
        }
    }
}

/// Waits until `cpu_ns` grows by less than [`STILL_NS`] over `window`.
pub(crate) fn wait_still(cpu_ns: impl Fn() -> Result<u64>, window: Duration) -> Result<()> {
    let start = Instant::now();
    let mut last = cpu_ns()?;
    loop {
        std::thread::sleep(window);
        let now = cpu_ns()?;
        if now.saturating_sub(last) < STILL_NS {
            return Ok(());
        }
        if start.elapsed() > SETTLE_LIMIT {
            bail!(
                "the watcher is still busy {} s after the storm",
                SETTLE_LIMIT.as_secs()
            );
        }
        last = now;
    }
}
