//! Privileged scaffolding for `frag` and `mount-storm`: finding the tools, a
//! loop device over a sparse image, `mkfs.btrfs`, and mounts confined to a
//! private mount namespace.
//!
//! The host must be left as found, even on error: the loop device and the
//! mount are guards that undo themselves on drop. Mounting happens only in a
//! child re-executed under `unshare -m --propagation private`, so the mount
//! never shows in the host's namespace and vanishes with the child. Only the
//! loop device this process attached is detached, by its path.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// Whether this process runs as root.
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Finds an executable in `$PATH` or the sbin directories.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs a command and fails with its stderr if it fails.
pub(crate) fn run_tool(cmd: &mut Command) -> Result<Output> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("run {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out)
}

/// A loop device this process attached; detached on drop.
#[derive(Debug)]
pub(crate) struct LoopDev {
    path: String,
    direct_io: bool,
}

impl LoopDev {
    /// Attaches `image` to a free loop device, with direct I/O if the kernel
    /// allows it (as the fragmentation anchor does).
    pub(crate) fn attach(image: &Path) -> Result<LoopDev> {
        let mut direct_io = true;
        let out = run_tool(
            Command::new("losetup")
                .args(["-f", "--show", "--direct-io=on"])
                .arg(image),
        )
        .or_else(|e| {
            eprintln!("  losetup with --direct-io=on failed ({e:#}); retrying without");
            direct_io = false;
            run_tool(Command::new("losetup").args(["-f", "--show"]).arg(image))
        })?;
        let path = String::from_utf8(out.stdout)?.trim().to_owned();
        if !path.starts_with("/dev/loop") {
            bail!("losetup printed {path:?}, not a loop device");
        }
        Ok(LoopDev { path, direct_io })
    }

    /// The device path, `/dev/loopN`.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Whether direct I/O is on.
    pub(crate) fn direct_io(&self) -> bool {
        self.direct_io
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        // A mount from a namespace that just exited can hold the device for
        // a moment; losetup -d then marks it autoclear, or we retry.
        for _ in 0..20 {
            match run_tool(Command::new("losetup").arg("-d").arg(&self.path)) {
                Ok(_) => {
                    eprintln!("  detached {}", self.path);
                    return;
                }
                Err(e) => {
                    eprintln!("  losetup -d {}: {e:#}; retrying", self.path);
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        eprintln!(
            "  WARNING: could not detach {}; run: losetup -d {}",
            self.path, self.path
        );
    }
}

/// Makes a fresh btrfs on `dev`, retrying while the device is still busy
/// from a mount that is going away.
pub(crate) fn mkfs_btrfs(dev: &str) -> Result<()> {
    let mut last = None;
    for _ in 0..60 {
        match run_tool(Command::new("mkfs.btrfs").args(["-f", "-q", dev])) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(last.expect("tried at least once"))
}

/// The identity of this process's mount namespace.
pub(crate) fn mount_ns() -> Result<String> {
    let p = std::fs::read_link("/proc/self/ns/mnt").context("readlink /proc/self/ns/mnt")?;
    Ok(p.to_string_lossy().into_owned())
}

/// The command that runs this executable with `args` in a new private mount
/// namespace (`unshare -m --propagation private`), stdin closed and stderr
/// passing through. The caller runs it (`output` or `status`) and judges the
/// exit status.
pub(crate) fn self_in_private_ns(args: &[OsString]) -> Result<Command> {
    let exe = std::env::current_exe().context("find own executable")?;
    let mut cmd = Command::new(find_tool("unshare").context("unshare not found")?);
    cmd.args(["-m", "--propagation", "private"])
        .arg(exe)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    Ok(cmd)
}

/// Fails unless this process is in a mount namespace other than
/// `outer_ns`, so that nothing it mounts reaches the host.
pub(crate) fn ensure_private_ns(outer_ns: &str) -> Result<()> {
    let ns = mount_ns()?;
    if ns == outer_ns {
        bail!("refusing to mount: still in the caller's mount namespace {ns}");
    }
    Ok(())
}

/// A mount made inside the private namespace; unmounted on drop.
#[derive(Debug)]
pub(crate) struct Mount {
    target: PathBuf,
}

impl Mount {
    /// Mounts `dev` on `target`. Refuses unless this process is in a mount
    /// namespace other than `outer_ns`, so the host never sees the mount.
    pub(crate) fn new(dev: &str, target: &Path, outer_ns: &str) -> Result<Mount> {
        ensure_private_ns(outer_ns)?;
        run_tool(Command::new("mount").args(["-t", "btrfs", dev]).arg(target))?;
        Ok(Mount {
            target: target.to_path_buf(),
        })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // If this fails, the mount still disappears when the namespace does.
        if let Err(e) = run_tool(Command::new("umount").arg(&self.target)) {
            eprintln!("  umount {}: {e:#}", self.target.display());
        }
    }
}
