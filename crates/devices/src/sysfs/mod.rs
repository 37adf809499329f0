//! Block devices as sysfs shows them: [`Sysfs::device`] snapshots one,
//! [`Sysfs::scan`] all of them.
//!
//! This runs for every device at startup and after an overflow of the
//! uevent queue, so for 1000+ devices: each attribute costs one `openat` and
//! one `read` relative to the device's directory fd, with no path walks from
//! the root and no `stat` first. A missing optional attribute is `None`. A
//! device removed while it is read is [`Error::Vanished`], which a scan
//! skips: the kernel's `remove` uevent tells the rest.

mod attr;
mod device;

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

pub use attr::AttrError;
pub use device::{BlockDevice, Detail, Kind};

use crate::{Error, Result};

/// The most devices a scan lists: far above any real system, low enough
/// that a hostile tree cannot exhaust memory.
pub const MAX_DEVICES: usize = 1 << 20;

/// The result of [`Sysfs::scan`].
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Scan {
    /// The devices read, sorted by name.
    pub devices: Vec<BlockDevice>,
    /// The devices that could not be read, with why, sorted by name.
    pub failed: Vec<(String, Error)>,
}

impl Scan {
    /// The device called `name`.
    pub fn get(&self, name: &str) -> Option<&BlockDevice> {
        let i = self.index(name)?;
        self.devices.get(i)
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut BlockDevice> {
        let i = self.index(name)?;
        self.devices.get_mut(i)
    }

    fn index(&self, name: &str) -> Option<usize> {
        // Sorted by name, as `Sysfs::names` returns them.
        self.devices
            .binary_search_by(|d| d.name.as_str().cmp(name))
            .ok()
    }
}

/// A sysfs tree: `/sys`, or a fake one in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Sysfs {
        Sysfs::new("/sys")
    }
}

impl Sysfs {
    /// The tree mounted at `root` (`/sys` on a real system).
    pub fn new(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    /// Where the tree is.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Snapshots device `name` (its entry in `class/block`), partitions of
    /// a disk included.
    pub fn device(&self, name: &str) -> Result<BlockDevice> {
        if !device::valid_name(name) {
            return Err(Error::BadName {
                name: name.to_owned(),
            });
        }
        let dir = self.class_block()?;
        device::read(dir.as_fd(), name, true, Detail::Full)
    }

    /// A fresh snapshot of `old` after a `change` uevent whose MAJOR and
    /// MINOR are `old`'s: only the attributes such an event can change are
    /// read again (`diskseq` only if the event did not carry it).
    pub fn refresh(&self, old: &BlockDevice, diskseq: Option<u64>) -> Result<BlockDevice> {
        if !device::valid_name(&old.name) {
            return Err(Error::BadName {
                name: old.name.clone(),
            });
        }
        // One open by path rather than two (class/block, then the entry).
        let path = self.root.join("class/block").join(&old.name);
        let dir = match rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                return Err(Error::Vanished {
                    name: old.name.clone(),
                });
            }
            Err(e) => {
                return Err(Error::Sysfs {
                    name: old.name.clone(),
                    attr: ".",
                    source: e.into(),
                });
            }
        };
        device::refresh(dir.as_fd(), old, diskseq)
    }

    /// The names in `class/block`, sorted.
    pub fn names(&self) -> Result<Vec<String>> {
        let path = self.root.join("class/block");
        let list_err = |source| Error::List {
            path: path.clone(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&path).map_err(list_err)? {
            let entry = entry.map_err(list_err)?;
            // Kernel device names are ASCII; anything else is not a device.
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if names.len() == MAX_DEVICES {
                return Err(list_err(std::io::Error::from(
                    std::io::ErrorKind::FileTooLarge,
                )));
            }
            names.push(name);
        }
        names.sort();
        Ok(names)
    }

    /// Snapshots every block device, sorted by name. Devices that vanish
    /// during the scan are left out. A device whose attributes do not read
    /// or parse is listed in [`Scan::failed`] rather than failing the scan:
    /// one odd device must not hide all the others. Only failing to list
    /// `class/block` fails the whole scan. Each disk's partitions are filled
    /// in from the partitions found, without listing its directory again.
    pub fn scan(&self) -> Result<Scan> {
        self.scan_with(Detail::Full)
    }

    /// [`scan`](Self::scan), reading each device with `detail`.
    pub fn scan_with(&self, detail: Detail) -> Result<Scan> {
        let dir = self.class_block()?;
        let mut scan = Scan::default();
        for name in self.names()? {
            match device::read(dir.as_fd(), &name, false, detail) {
                Ok(d) => scan.devices.push(d),
                Err(Error::Vanished { name }) => {
                    tracing::debug!(%name, "block device vanished during the scan");
                }
                Err(e) => scan.failed.push((name, e)),
            }
        }
        let parts: Vec<(String, String)> = scan
            .devices
            .iter()
            .filter_map(|d| match &d.kind {
                Kind::Partition { parent, .. } => Some((parent.clone(), d.name.clone())),
                Kind::Disk { .. } => None,
            })
            .collect();
        for (parent, part) in parts {
            if let Some(Kind::Disk { partitions }) = scan.get_mut(&parent).map(|d| &mut d.kind) {
                partitions.push(part);
            }
        }
        Ok(scan)
    }

    fn class_block(&self) -> Result<OwnedFd> {
        let path = self.root.join("class/block");
        rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::List {
            path,
            source: e.into(),
        })
    }
}
