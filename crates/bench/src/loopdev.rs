//! Privileged scaffolding for `frag`, `mount-storm`, `lvm` and `daemon`:
//! `mkfs.btrfs`, and mounts confined to a private mount namespace. Finding
//! the tools, running them and the loop device guard are weir-lvmfleet's,
//! shared with the tests, and re-exported here.
//!
//! The host must be left as found, even on error: the loop device and the
//! mount are guards that undo themselves on drop. Mounting happens only in a
//! child re-executed under `unshare -m --propagation private`, so the mount
//! never shows in the host's namespace and vanishes with the child. Only the
//! loop device this process attached is detached, by its path, and only
//! while the kernel still shows our image behind it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub(crate) use weir_lvmfleet::{LoopDev, find_tool, is_root, run_tool};

/// Makes a fresh btrfs on `dev`, retrying while the device is still busy
/// from a mount that is going away.
pub(crate) fn mkfs_btrfs(dev: &Path) -> Result<()> {
    let mut last = None;
    for _ in 0..60 {
        match run_tool(Command::new("mkfs.btrfs").args(["-f", "-q"]).arg(dev)) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(last.expect("tried at least once").into())
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

/// The arguments of a hidden `*-inner` subcommand: its benchmark's, which
/// [`rerun_in_private_ns`] passes through, and the caller's mount
/// namespace.
#[derive(clap::Args, Debug)]
pub(crate) struct InPrivateNs<A: clap::Args> {
    #[command(flatten)]
    args: A,
    /// The caller's mount namespace; mounting is refused if still in it.
    #[arg(long)]
    outer_ns: String,
}

impl<A: clap::Args> InPrivateNs<A> {
    /// The benchmark's arguments, once this process is known to be in a
    /// mount namespace other than the caller's.
    pub(crate) fn enter(self) -> Result<A> {
        ensure_private_ns(&self.outer_ns)?;
        Ok(self.args)
    }

    /// The caller's mount namespace, for guards that check again before
    /// they mount.
    pub(crate) fn outer_ns(&self) -> &str {
        &self.outer_ns
    }
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
