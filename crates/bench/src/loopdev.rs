//! Privileged scaffolding for `frag`, `mount-storm` and `lvm`: finding the
//! tools, loop devices over sparse images, `mkfs.btrfs`, and mounts confined
//! to a private mount namespace.
//!
//! The host must be left as found, even on error: the loop device and the
//! mount are guards that undo themselves on drop. Mounting happens only in a
//! child re-executed under `unshare -m --propagation private`, so the mount
//! never shows in the host's namespace and vanishes with the child. Only the
//! loop device this process attached is detached, by its path, and only
//! while the kernel still shows our image behind it.

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
    /// The backing file, as the kernel names it, to recognise the device
    /// as still ours before detaching it.
    image: PathBuf,
    /// No message on a successful detach (`lvm` detaches a thousand).
    quiet: bool,
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
        LoopDev::from_losetup(&out, image, direct_io, false)
    }

    /// Attaches `image` to a free loop device the plain way (`losetup
    /// --show -f`, buffered I/O), as a disk appears to the kernel; detached
    /// without a message.
    pub(crate) fn attach_plain(image: &Path) -> Result<LoopDev> {
        let out = run_tool(Command::new("losetup").args(["--show", "-f"]).arg(image))?;
        LoopDev::from_losetup(&out, image, false, true)
    }

    fn from_losetup(out: &Output, image: &Path, direct_io: bool, quiet: bool) -> Result<LoopDev> {
        let path = std::str::from_utf8(&out.stdout)?.trim().to_owned();
        if !path.starts_with("/dev/loop") {
            bail!("losetup printed {path:?}, not a loop device");
        }
        // The kernel shows the absolute path the file was opened by.
        let image = std::fs::canonicalize(image).unwrap_or_else(|_| image.to_path_buf());
        Ok(LoopDev {
            path,
            direct_io,
            image,
            quiet,
        })
    }

    /// The device path, `/dev/loopN`.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Whether direct I/O is on.
    pub(crate) fn direct_io(&self) -> bool {
        self.direct_io
    }

    /// The kernel name, `loopN`, under `/sys/block`.
    pub(crate) fn name(&self) -> &str {
        self.path.trim_start_matches("/dev/")
    }

    /// Whether the kernel still shows our image behind the device: a device
    /// detached by someone else may since have been given to another user.
    pub(crate) fn holds_image(&self) -> bool {
        let p = format!("/sys/block/{}/loop/backing_file", self.name());
        std::fs::read_to_string(p).is_ok_and(|s| {
            let s = s.trim_end_matches('\n');
            let s = s.strip_suffix(" (deleted)").unwrap_or(s);
            Path::new(s) == self.image
        })
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        if !self.holds_image() {
            eprintln!(
                "  not detaching {}: {} is no longer behind it",
                self.path,
                self.image.display()
            );
            return;
        }
        // A mount from a namespace that just exited can hold the device for
        // a moment; losetup -d then marks it autoclear, or we retry.
        for _ in 0..20 {
            match run_tool(Command::new("losetup").arg("-d").arg(&self.path)) {
                Ok(_) => {
                    if !self.quiet {
                        eprintln!("  detached {}", self.path);
                    }
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

/// Runs this executable again as `INNER --outer-ns NS ARGS...` in a new
/// private mount namespace, where ARGS are the arguments that followed
/// `bench` on this command line (they pass through unchanged); fails
/// unless it succeeds.
pub(crate) fn rerun_in_private_ns(bench: &str, inner: &str) -> Result<()> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let pos = argv
        .iter()
        .position(|a| a == bench)
        .with_context(|| format!("{bench} not found in the arguments"))?;
    let mut args: Vec<OsString> = vec![inner.into(), "--outer-ns".into(), mount_ns()?.into()];
    args.extend_from_slice(&argv[pos + 1..]);
    let st = self_in_private_ns(&args)?.status().context("run unshare")?;
    if !st.success() {
        bail!("{bench} in a private mount namespace failed ({st})");
    }
    Ok(())
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
