//! Loop devices for the privileged tests: the root/tool check, and a guard
//! that detaches the device it attached, by path, even when a test fails.

// Each test binary uses only part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why loop devices cannot be used here, if they cannot.
pub(crate) fn unavailable() -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        return Some("needs root to attach loop devices");
    }
    if !have("losetup") {
        return Some("needs losetup(8) from util-linux");
    }
    None
}

/// Whether `tool` runs (`tool --version`).
pub(crate) fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A loop device this test attached; detached by its path on drop.
#[derive(Debug)]
pub(crate) struct LoopDev {
    path: PathBuf,
}

impl LoopDev {
    /// `losetup --show -f [-P] image`: attaches `image` to a free loop
    /// device, scanning its partition table if `partscan`.
    pub(crate) fn attach(image: &Path, partscan: bool) -> LoopDev {
        let mut cmd = Command::new("losetup");
        cmd.args(["--show", "-f"]);
        if partscan {
            cmd.arg("-P");
        }
        let out = cmd.arg(image).output().expect("run losetup");
        assert!(out.status.success(), "losetup failed: {out:?}");
        let path = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        assert!(path.starts_with("/dev/loop"), "losetup printed {path:?}");
        LoopDev {
            path: PathBuf::from(path),
        }
    }

    /// `/dev/loopN`.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Adds partition `number` of `sectors` 512-byte sectors at sector
    /// `start` with addpart(8) (BLKPG): the kernel here may parse no
    /// partition table format, but the ioctl needs none. Needs a device
    /// attached with `partscan`; the partition goes away with the device.
    pub(crate) fn add_partition(&self, number: u32, start: u64, sectors: u64) {
        let out = Command::new("addpart")
            .arg(&self.path)
            .args([number.to_string(), start.to_string(), sectors.to_string()])
            .output()
            .expect("run addpart");
        assert!(out.status.success(), "addpart failed: {out:?}");
    }

    /// `loopN`.
    pub(crate) fn name(&self) -> &str {
        self.path.file_name().and_then(|n| n.to_str()).unwrap()
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let ok = Command::new("losetup")
            .arg("-d")
            .arg(&self.path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("warning: could not detach {}", self.path.display());
        }
    }
}
