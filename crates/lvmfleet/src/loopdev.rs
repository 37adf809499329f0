//! A loop device this process attached: attached with `losetup`, detached
//! by its path, and only while the kernel still shows our file behind it
//! (a device someone else detached may since have been given to another
//! user).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::{Error, Result, run_tool};

/// How long a detach may take to show in sysfs: it is deferred while some
/// other process holds the device open.
const DETACH_TIMEOUT: Duration = Duration::from_secs(20);

/// A loop device this process attached; detached by its path on drop.
#[derive(Debug)]
pub struct LoopDev {
    path: String,
    /// The backing file, as the kernel names it (absolute).
    image: PathBuf,
    direct_io: bool,
    /// Whether a successful detach on drop goes unannounced (a fleet
    /// detaches a thousand).
    quiet: bool,
    /// Whether drop still has to detach the device.
    armed: bool,
}

impl LoopDev {
    /// `losetup --show -f image`: the lowest free device, buffered I/O, as
    /// a disk appears to the kernel. Detached without a message.
    pub fn attach(image: &Path) -> Result<LoopDev> {
        let out = run_tool(Command::new("losetup").args(["--show", "-f"]).arg(image))?;
        LoopDev::from_losetup(&out, image, false, true)
    }

    /// As [`LoopDev::attach`], with the partition table scanned (`-P`), so
    /// that [`LoopDev::add_partition`] works.
    pub fn attach_partscan(image: &Path) -> Result<LoopDev> {
        let out = run_tool(
            Command::new("losetup")
                .args(["--show", "-f", "-P"])
                .arg(image),
        )?;
        LoopDev::from_losetup(&out, image, false, true)
    }

    /// Attaches `image` to a free device with direct I/O if the kernel
    /// allows it, buffered otherwise; says so, and announces its detach.
    pub fn attach_direct(image: &Path) -> Result<LoopDev> {
        let mut direct_io = true;
        let out = run_tool(
            Command::new("losetup")
                .args(["-f", "--show", "--direct-io=on"])
                .arg(image),
        )
        .or_else(|e| {
            eprintln!("  losetup with --direct-io=on failed ({e}); retrying without");
            direct_io = false;
            run_tool(Command::new("losetup").args(["-f", "--show"]).arg(image))
        })?;
        LoopDev::from_losetup(&out, image, direct_io, false)
    }

    /// `losetup /dev/loopN image`: the device of that number, which the
    /// kernel creates if it is missing. Detached without a message.
    pub fn attach_at(number: u32, image: &Path) -> Result<LoopDev> {
        let path = format!("/dev/loop{number}");
        run_tool(Command::new("losetup").arg(&path).arg(image))?;
        Ok(LoopDev {
            path,
            image: absolute(image),
            direct_io: false,
            quiet: true,
            armed: true,
        })
    }

    fn from_losetup(out: &Output, image: &Path, direct_io: bool, quiet: bool) -> Result<LoopDev> {
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !path.starts_with("/dev/loop") {
            return Err(Error::Unexpected(format!(
                "losetup printed {path:?}, not a loop device"
            )));
        }
        Ok(LoopDev {
            path,
            image: absolute(image),
            direct_io,
            quiet,
            armed: true,
        })
    }

    /// The device path, `/dev/loopN`.
    pub fn path(&self) -> &Path {
        Path::new(&self.path)
    }

    /// The kernel name, `loopN`, under `/sys/block`.
    pub fn name(&self) -> &str {
        self.path.trim_start_matches("/dev/")
    }

    /// The device number `N` (its minor number; the major is 7).
    pub fn number(&self) -> u32 {
        self.name()
            .trim_start_matches("loop")
            .parse()
            .unwrap_or(u32::MAX)
    }

    /// Whether direct I/O is on.
    pub fn direct_io(&self) -> bool {
        self.direct_io
    }

    /// Whether the kernel still shows our file behind the device.
    pub fn holds_image(&self) -> bool {
        let p = format!("/sys/block/{}/loop/backing_file", self.name());
        std::fs::read_to_string(p).is_ok_and(|s| {
            let s = s.trim_end_matches('\n');
            let s = s.strip_suffix(" (deleted)").unwrap_or(s);
            Path::new(s) == self.image
        })
    }

    /// Adds partition `number` of `sectors` 512-byte sectors at sector
    /// `start` with addpart(8) (BLKPG): the kernel may parse no partition
    /// table format, but the ioctl needs none. Needs a device attached
    /// with [`LoopDev::attach_partscan`]; the partition goes away with the
    /// device.
    pub fn add_partition(&self, number: u32, start: u64, sectors: u64) -> Result<()> {
        run_tool(Command::new("addpart").arg(&self.path).args([
            number.to_string(),
            start.to_string(),
            sectors.to_string(),
        ]))
        .map(drop)
    }

    /// Detaches the device now, by its path, and waits until sysfs shows
    /// it unbound, so that its number can be attached again at once. A
    /// device that no longer holds our file is left alone; one that
    /// cannot be detached is tried again on drop.
    pub fn detach(mut self) -> Result<()> {
        if !self.holds_image() {
            self.armed = false;
            return Err(Error::Unexpected(format!(
                "not detaching {}: {} is no longer behind it",
                self.path,
                self.image.display()
            )));
        }
        run_tool(Command::new("losetup").arg("-d").arg(&self.path))?;
        self.armed = false;
        wait_unbound(self.number())
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
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
                    eprintln!("  losetup -d {}: {e}; retrying", self.path);
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

/// The absolute path the kernel shows for a file opened by `p`.
fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Whether loop device `number` is attached to a file.
pub(crate) fn is_bound(number: u32) -> bool {
    Path::new(&format!("/sys/block/loop{number}/loop")).exists()
}

/// Waits until loop device `number` is unbound: a detach is deferred
/// while another process holds the device open.
fn wait_unbound(number: u32) -> Result<()> {
    let deadline = Instant::now() + DETACH_TIMEOUT;
    while is_bound(number) {
        if Instant::now() >= deadline {
            return Err(Error::Unexpected(format!(
                "loop{number} still attached {DETACH_TIMEOUT:?} after losetup -d"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
