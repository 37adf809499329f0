//! The storm itself: a tmpfs holding one source directory and the target
//! directories `d0..dN`, and the two ways of bind-mounting onto them.
//!
//! - mount(8): `mount --bind SRC dI`, one process per mount, waited for in
//!   turn, then `umount dI` each, run by a bash loop in a process of its
//!   own as in the anchor (`storm.sh`).
//! - raw: `mount(2)` with `MS_BIND`, then `umount2(2)`, all in this process,
//!   like the anchor's `storm_raw.c`: no fork or exec, so the watcher's
//!   share of the cost shows.
//!
//! Everything is made inside the private mount namespace the benchmark
//! runs in. The workspace's tmpfs is detached lazily on drop, which takes
//! every bind mount beneath it along, whatever error cut a storm short.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use rustix::mount::{MountFlags, UnmountFlags, mount, mount_bind, unmount};

/// How the storm's mounts are made.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord, clap::ValueEnum)]
pub(crate) enum Loop {
    /// `mount(8)` and `umount(8)`, one process per mount.
    #[value(name = "mount8")]
    Mount8,
    /// `mount(2)` and `umount2(2)` from this process.
    Raw,
}

impl Loop {
    pub(crate) const ALL: [Loop; 2] = [Loop::Mount8, Loop::Raw];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Loop::Mount8 => "mount(8)",
            Loop::Raw => "raw",
        }
    }

    /// The name on the command line and in the JSON.
    pub(crate) fn arg(self) -> &'static str {
        match self {
            Loop::Mount8 => "mount8",
            Loop::Raw => "raw",
        }
    }
}

/// The storm's tmpfs and its directories.
pub(crate) struct Workspace {
    // Dropped after the tmpfs is detached (see Drop), so the directory is
    // empty by then and can be removed.
    tmp: Option<tempfile::TempDir>,
    src: PathBuf,
    targets: Vec<PathBuf>,
    logs: PathBuf,
    mount_tool: PathBuf,
    umount_tool: PathBuf,
}

impl Workspace {
    /// Mounts a tmpfs on a fresh temporary directory and makes the source,
    /// `n` targets and a directory for logs on it.
    pub(crate) fn new(n: usize, mount_tool: PathBuf, umount_tool: PathBuf) -> Result<Workspace> {
        let tmp = tempfile::Builder::new()
            .prefix("weir-bench-storm.")
            .tempdir()
            .context("create the storm directory")?;
        let root = tmp.path().to_path_buf();
        mount(
            "weir-bench-storm",
            &root,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            c"mode=0755",
        )
        .with_context(|| format!("mount a tmpfs on {}", root.display()))?;
        let ws = Workspace {
            tmp: Some(tmp),
            src: root.join("src"),
            targets: (0..n).map(|i| root.join(format!("d{i}"))).collect(),
            logs: root.join("logs"),
            mount_tool,
            umount_tool,
        };
        // From here on, Drop detaches the tmpfs.
        std::fs::create_dir(&ws.src)?;
        std::fs::write(
            ws.src.join("file"),
            b"bind-mounted by weir-bench mount-storm\n",
        )?;
        std::fs::create_dir(&ws.logs)?;
        for t in &ws.targets {
            std::fs::create_dir(t).with_context(|| format!("mkdir {}", t.display()))?;
        }
        Ok(ws)
    }

    /// The directory bind-mounted everywhere.
    pub(crate) fn src(&self) -> &Path {
        &self.src
    }

    /// Target `i`.
    pub(crate) fn target(&self, i: usize) -> &Path {
        &self.targets[i]
    }

    /// A fresh, empty directory for one log (on the tmpfs, so the log's
    /// writes cost no disk I/O that a real disk would make noisy).
    pub(crate) fn log_dir(&self, name: &str) -> Result<PathBuf> {
        let d = self.logs.join(name);
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
        std::fs::create_dir(&d)?;
        Ok(d)
    }

    /// Bind-mounts the source on targets `0..n`.
    pub(crate) fn attach(&self, lp: Loop, n: usize) -> Result<()> {
        self.check(n)?;
        match lp {
            Loop::Mount8 => {
                let mut c = shell_loop(
                    r#"m=$1 s=$2; shift 2; for t; do "$m" --bind "$s" "$t" || exit 1; done"#,
                );
                c.arg(&self.mount_tool)
                    .arg(&self.src)
                    .args(&self.targets[..n]);
                run_quiet(&mut c, "the mount(8) loop")?;
            }
            Loop::Raw => {
                for t in &self.targets[..n] {
                    mount_bind(&self.src, t)
                        .with_context(|| format!("mount --bind onto {}", t.display()))?;
                }
            }
        }
        Ok(())
    }

    /// Unmounts targets `0..n`.
    pub(crate) fn detach(&self, lp: Loop, n: usize) -> Result<()> {
        self.check(n)?;
        match lp {
            Loop::Mount8 => {
                let mut c = shell_loop(r#"u=$1; shift; for t; do "$u" "$t" || exit 1; done"#);
                c.arg(&self.umount_tool).args(&self.targets[..n]);
                run_quiet(&mut c, "the umount(8) loop")?;
            }
            Loop::Raw => {
                for t in &self.targets[..n] {
                    unmount(t, UnmountFlags::empty())
                        .with_context(|| format!("umount {}", t.display()))?;
                }
            }
        }
        Ok(())
    }

    /// Unmounts whatever is still mounted on targets `0..n` after a failed
    /// run, so the next run starts clean; errors (not mounted) are ignored.
    pub(crate) fn cleanup(&self, n: usize) {
        for t in &self.targets[..n.min(self.targets.len())] {
            let _ = unmount(t, UnmountFlags::DETACH);
        }
    }

    /// Fails unless there are at least `n` targets.
    pub(crate) fn check(&self, n: usize) -> Result<()> {
        if n > self.targets.len() {
            bail!("{n} mounts asked for, {} targets made", self.targets.len());
        }
        Ok(())
    }

    /// Times `attach` or `detach`: wall seconds.
    pub(crate) fn timed(&self, f: impl FnOnce(&Self) -> Result<()>) -> Result<f64> {
        let t = Instant::now();
        f(self)?;
        Ok(t.elapsed().as_secs_f64())
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            // Lazy: detaches the tmpfs with every bind mount still beneath
            // it, even ones some process still uses.
            if let Err(e) = unmount(tmp.path(), UnmountFlags::DETACH) {
                eprintln!("  umount -l {}: {e}", tmp.path().display());
            }
            drop(tmp);
        }
    }
}

/// A bash loop running `script` over the arguments that follow. The
/// mount(8) storm runs as the anchor's `storm.sh` runs it, a shell loop in
/// a process of its own: spawning 2000 processes from this one, which also
/// hosts weir's tracker threads, measured the spawner's interplay with
/// those threads (an in-process watcher cost the loop 4-7% while findmnt
/// in a process of its own, using a whole CPU, cost it under 1%), not
/// what a watcher costs the mounts.
fn shell_loop(script: &str) -> Command {
    let mut c = Command::new("bash");
    c.arg("-c").arg(script).arg("weir-bench-storm");
    c
}

/// Runs `c` with stderr passing through, so a failed mount tool explains
/// itself; fails when it fails. `c` is called `what` in errors: its
/// arguments, thousands of targets, would drown the message.
fn run_quiet(c: &mut Command, what: &str) -> Result<()> {
    let st = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("run {what}"))?;
    if !st.success() {
        bail!("{what} failed ({st})");
    }
    Ok(())
}
