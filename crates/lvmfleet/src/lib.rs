//! `weir-lvmfleet`: loop devices, and VGs made on them by the real LVM2
//! tools, for the privileged tests of weir-devices and weir and for
//! weir-bench; one implementation, so that the tests and the benchmarks
//! make, drive and tear down their fleets the same way.
//!
//! - [`LoopDev`]: a loop device this process attached, detached by its
//!   path on drop, and only while the kernel still shows our file behind
//!   it.
//! - [`LvmEnv`]: a private `LVM_SYSTEM_DIR` (the project's test `lvm.conf`:
//!   no devices file, no udev, no activation), so that `/etc/lvm` is never
//!   read or written, and the `lvm` commands run in it.
//! - [`Fleet`]: a VG over loop devices, made with `pvcreate`, `vgcreate`
//!   and `lvcreate`, whose devices a caller can detach and attach again;
//!   on drop it removes the VG and the PV labels and detaches its devices.
//!
//! The host must be left as found, even when a test fails or a benchmark
//! is interrupted: nothing here runs `losetup -D` or touches a device it
//! did not attach. It is a crate of its own, `publish = false`, so that
//! this scaffolding is not part of any library's public API.
#![forbid(unsafe_code)]

mod env;
mod fleet;
mod loopdev;
mod number;

use std::path::PathBuf;
use std::process::{Command, ExitStatus, Output, Stdio};

pub use env::LvmEnv;
pub use fleet::{Fleet, Numbers, Setup};
pub use loopdev::LoopDev;

/// What went wrong while making, driving or tearing down a fleet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory operation failed.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A tool ran and failed.
    #[error("{cmd} failed ({status}): {stderr}")]
    Tool {
        /// The command line, as `Command`'s `Debug` shows it.
        cmd: String,
        /// Its exit status.
        status: ExitStatus,
        /// Its stderr, trimmed.
        stderr: String,
    },
    /// A tool said something this crate did not expect.
    #[error("{0}")]
    Unexpected(String),
    /// The caller's interrupt flag went up during a setup.
    #[error("interrupted; tearing down")]
    Interrupted,
}

/// This crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}

/// Why loop devices cannot be used here, if they cannot.
pub fn loop_unavailable() -> Option<&'static str> {
    if !is_root() {
        return Some("needs root to attach loop devices");
    }
    if !have("losetup") {
        return Some("needs losetup(8) from util-linux");
    }
    None
}

/// Why LVM fleets cannot be made here, if they cannot.
pub fn unavailable() -> Option<&'static str> {
    if let Some(why) = loop_unavailable() {
        return Some(why);
    }
    // `lvm --version` fails without device-mapper; `lvm version` does not.
    let lvm = Command::new("lvm")
        .arg("version")
        .env("LVM_SUPPRESS_FD_WARNINGS", "1")
        .stdin(Stdio::null())
        .output();
    if !lvm.is_ok_and(|o| o.status.success()) {
        return Some("needs lvm(8) from lvm2");
    }
    None
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether `tool` runs (`tool --version`).
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Finds an executable in `$PATH` or the sbin directories (root's `$PATH`
/// need not name them).
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs a command with stdin closed; fails with its stderr if it fails.
pub fn run_tool(cmd: &mut Command) -> Result<Output> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(Error::io(format!("run {cmd:?}")))?;
    if !out.status.success() {
        return Err(Error::Tool {
            cmd: format!("{cmd:?}"),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out)
}
