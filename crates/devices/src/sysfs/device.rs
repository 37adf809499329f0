//! [`BlockDevice`]: what sysfs says about one block device, and reading it
//! from its directory under `class/block`.
//!
//! A partition has no `queue/` and no `removable` of its own: those are
//! read from its disk, the directory above its own (`..` from the
//! partition's directory fd, which the kernel resolves in the real tree).

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::attr::{AttrError, AttrReader, parse_devnum};
use crate::{Error, Result};

/// Whether a block device is a whole disk or a partition of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A whole disk (or a loop device, an md array...).
    Disk {
        /// Its partitions' names, sorted (`sda1`, `sda2`).
        partitions: Vec<String>,
    },
    /// A partition.
    Partition {
        /// Its number (`partition`).
        number: u32,
        /// Its disk's name (`sda`).
        parent: String,
    },
}

/// A snapshot of one block device's sysfs attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// The name in /sys/class/block (`sda1`, `nvme0n1`, `loop3`).
    pub name: String,
    /// `dev`: the major number.
    pub major: u32,
    /// `dev`: the minor number.
    pub minor: u32,
    /// `size` × 512 (sysfs counts 512-byte sectors whatever the block size).
    pub size_bytes: u64,
    /// `ro`.
    pub read_only: bool,
    /// `removable` (a partition takes its disk's); `None` if absent.
    pub removable: Option<bool>,
    /// `queue/rotational` (a partition takes its disk's); `None` if absent.
    pub rotational: Option<bool>,
    /// `queue/logical_block_size` (a partition takes its disk's).
    pub logical_block_size: Option<u32>,
    /// Disk or partition.
    pub kind: Kind,
    /// `holders/`: the devices built on this one (`dm-0`), sorted.
    pub holders: Vec<String>,
    /// `slaves/`: the devices this one is built on, sorted.
    pub slaves: Vec<String>,
    /// `loop/backing_file` of an attached loop device, as the kernel wrote
    /// it (with ` (deleted)` appended if the file was unlinked).
    pub backing_file: Option<PathBuf>,
    /// `device/model`, trimmed.
    pub model: Option<String>,
    /// `device/serial`, else `serial` (virtio), trimmed.
    pub serial: Option<String>,
    /// `wwid`, else `device/wwid`.
    pub wwid: Option<String>,
    /// `diskseq` (5.15+; a partition takes its disk's).
    pub diskseq: Option<u64>,
    /// `DEVNAME` from `uevent`: the node relative to /dev.
    pub devname: Option<String>,
}

impl BlockDevice {
    /// The device node: `/dev/DEVNAME`, or `/dev/NAME` without a DEVNAME.
    pub fn dev_path(&self) -> PathBuf {
        Path::new("/dev").join(self.devname.as_deref().unwrap_or(&self.name))
    }

    /// Whether this is a partition.
    pub fn is_partition(&self) -> bool {
        matches!(self.kind, Kind::Partition { .. })
    }
}

/// Whether `name` can be an entry of `class/block` (so joining it to a path
/// cannot leave that directory).
pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// Reads device `name` from the `class/block` directory fd. With
/// `list_partitions`, a disk's partitions are found by listing its
/// directory; a whole scan fills them in from the partitions instead.
pub(super) fn read(
    class_block: BorrowedFd<'_>,
    name: &str,
    list_partitions: bool,
    detail: Detail,
) -> Result<BlockDevice> {
    let dir = match rustix::fs::openat(
        class_block,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Err(vanished(name)),
        Err(e) => return Err(sysfs_err(name, ".", e.into())),
    };
    let mut r = AttrReader::new(dir.as_fd());
    let err = |attr: &'static str| move |source| sysfs_err(name, attr, source);
    let required = |r: &mut AttrReader<'_>, attr: &'static str| -> Result<Vec<u8>> {
        match r.raw(attr) {
            Ok(Some(v)) => Ok(v.to_vec()),
            Ok(None) => Err(gone_or(class_block, name, attr, AttrError::Missing)),
            Err(e) => Err(sysfs_err(name, attr, e)),
        }
    };

    let (major, minor) = parse_devnum(&required(&mut r, "dev")?).map_err(err("dev"))?;
    let sectors: u64 =
        super::attr::parse_number(&required(&mut r, "size")?).map_err(err("size"))?;
    let size_bytes = sectors_to_bytes(name, sectors)?;
    let read_only = r
        .flag("ro")
        .map_err(err("ro"))?
        .ok_or_else(|| gone_or(class_block, name, "ro", AttrError::Missing))?;

    let partition: Option<u32> = r.number("partition").map_err(err("partition"))?;
    // Attributes a partition inherits from its disk, one directory up.
    let up = if partition.is_some() { "../" } else { "" };
    let full = detail == Detail::Full;
    let removable = if full {
        r.flag(&format!("{up}removable"))
            .map_err(err("removable"))?
    } else {
        None
    };
    let rotational = if full {
        r.flag(&format!("{up}queue/rotational"))
            .map_err(err("queue/rotational"))?
    } else {
        None
    };
    let logical_block_size = r
        .number(&format!("{up}queue/logical_block_size"))
        .map_err(err("queue/logical_block_size"))?;
    let diskseq = if full {
        r.number(&format!("{up}diskseq")).map_err(err("diskseq"))?
    } else {
        None
    };

    let kind = match partition {
        Some(number) => Kind::Partition {
            number,
            parent: parent_name(class_block, name)?,
        },
        None => Kind::Disk {
            partitions: if list_partitions {
                list_dir(dir.as_fd(), name, ".", |e| {
                    e.starts_with(name) && is_partition_dir(dir.as_fd(), e)
                })?
            } else {
                Vec::new()
            },
        },
    };
    let mut d = Extra::default();
    if full {
        d.holders = list_dir(dir.as_fd(), name, "holders", |_| true)?;
        d.slaves = list_dir(dir.as_fd(), name, "slaves", |_| true)?;
        d.backing_file = r
            .raw("loop/backing_file")
            .map_err(err("loop/backing_file"))?
            .filter(|v| !v.is_empty())
            .map(|v| PathBuf::from(OsString::from_vec(v.to_vec())));
        d.model = r.text("device/model").map_err(err("device/model"))?;
        d.serial = match r.text("device/serial").map_err(err("device/serial"))? {
            Some(s) => Some(s),
            None => r.text("serial").map_err(err("serial"))?,
        };
        d.wwid = match r.text("wwid").map_err(err("wwid"))? {
            Some(s) => Some(s),
            None => r.text("device/wwid").map_err(err("device/wwid"))?,
        };
    }
    // Read last: every device has a `uevent`, so its absence now means the
    // device went away while we read it.
    let uevent = match r.raw("uevent").map_err(err("uevent"))? {
        Some(v) => v.to_vec(),
        None => {
            return Err(gone_or(class_block, name, "uevent", AttrError::Missing));
        }
    };
    let devname = devname(&uevent).map_err(err("uevent"))?;

    Ok(BlockDevice {
        name: name.to_owned(),
        major,
        minor,
        size_bytes,
        read_only,
        removable,
        rotational,
        logical_block_size,
        kind,
        holders: d.holders,
        slaves: d.slaves,
        backing_file: d.backing_file,
        model: d.model,
        serial: d.serial,
        wwid: d.wwid,
        diskseq,
        devname,
    })
}

/// How much of a device [`read`] reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Every attribute.
    #[default]
    Full,
    /// What probing for LVM needs: number, size, read-only, partition or
    /// disk, logical block size and the /dev name; the rest stays empty.
    /// A third of the reads, for `pvs` and `vgs` over thousands of devices.
    Probe,
}

/// The attributes only [`Detail::Full`] reads.
#[derive(Default)]
struct Extra {
    holders: Vec<String>,
    slaves: Vec<String>,
    backing_file: Option<PathBuf>,
    model: Option<String>,
    serial: Option<String>,
    wwid: Option<String>,
}

/// Re-reads only what a `change` uevent can change on a known device:
/// `size`, `ro`, a loop device's backing file and, unless the uevent
/// carried it, `diskseq`; everything else is kept from `old`. A `change` is
/// what attaching or detaching a loop device, a media change or a resize
/// sends, and reading 3 attributes instead of 20 (and no directory
/// listings) is most of the per-event cost.
///
/// The caller has checked that the device number is still `old`'s (the
/// uevent's MAJOR and MINOR say so); `dir` is the device's directory.
pub(super) fn refresh(
    dir: BorrowedFd<'_>,
    old: &BlockDevice,
    diskseq: Option<u64>,
) -> Result<BlockDevice> {
    let name = old.name.as_str();
    let mut r = AttrReader::new(dir);
    let err = |attr: &'static str| move |source| sysfs_err(name, attr, source);
    let sectors: u64 = r
        .number("size")
        .map_err(err("size"))?
        .ok_or_else(|| sysfs_err(name, "size", AttrError::Missing))?;
    let size_bytes = sectors_to_bytes(name, sectors)?;
    let read_only = r
        .flag("ro")
        .map_err(err("ro"))?
        .ok_or_else(|| sysfs_err(name, "ro", AttrError::Missing))?;
    let diskseq = match diskseq {
        Some(n) => Some(n),
        None => {
            let up = if old.is_partition() { "../" } else { "" };
            r.number(&format!("{up}diskseq")).map_err(err("diskseq"))?
        }
    };
    let backing_file = if old.major == LOOP_MAJOR || old.backing_file.is_some() {
        r.raw("loop/backing_file")
            .map_err(err("loop/backing_file"))?
            .filter(|v| !v.is_empty())
            .map(|v| PathBuf::from(OsString::from_vec(v.to_vec())))
    } else {
        None
    };
    Ok(BlockDevice {
        size_bytes,
        read_only,
        diskseq,
        backing_file,
        ..old.clone()
    })
}

/// sysfs's `size` (512-byte sectors, whatever the block size) in bytes.
fn sectors_to_bytes(name: &str, sectors: u64) -> Result<u64> {
    sectors.checked_mul(512).ok_or_else(|| {
        sysfs_err(
            name,
            "size",
            AttrError::Invalid {
                what: "more bytes than a u64 holds",
            },
        )
    })
}

/// The loop driver's major number: only loop devices have a backing file.
const LOOP_MAJOR: u32 = 7;

/// `DEVNAME=` in a `uevent` file: relative to /dev, and staying there.
fn devname(uevent: &[u8]) -> Result<Option<String>, AttrError> {
    let Some(v) = uevent
        .split(|&b| b == b'\n')
        .find_map(|l| l.strip_prefix(b"DEVNAME="))
    else {
        return Ok(None);
    };
    let s = std::str::from_utf8(v).map_err(|_| AttrError::NotUtf8)?;
    let stays = Path::new(s)
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    if s.is_empty() || !stays {
        return Err(AttrError::Invalid {
            what: "DEVNAME is not a path under /dev",
        });
    }
    Ok(Some(s.to_owned()))
}

/// A partition's disk: the directory above the partition's in the real
/// tree, i.e. the next-to-last component of the `class/block` link
/// (`../../devices/.../block/sda/sda1`).
fn parent_name(class_block: BorrowedFd<'_>, name: &str) -> Result<String> {
    let link = match rustix::fs::readlinkat(class_block, name, Vec::new()) {
        Ok(l) => l,
        Err(Errno::NOENT) => return Err(vanished(name)),
        Err(e) => return Err(sysfs_err(name, ".", e.into())),
    };
    let bytes = link.as_bytes();
    let mut parts = bytes.rsplit(|&b| b == b'/').filter(|p| !p.is_empty());
    let parent = parts
        .nth(1)
        .filter(|p| *p != b"." && *p != b"..")
        .ok_or_else(|| {
            sysfs_err(
                name,
                ".",
                AttrError::Invalid {
                    what: "the class/block link names no parent disk",
                },
            )
        })?;
    String::from_utf8(parent.to_vec()).map_err(|_| sysfs_err(name, ".", AttrError::NotUtf8))
}

/// Whether entry `e` of a disk's directory is a partition (has `partition`).
fn is_partition_dir(dir: BorrowedFd<'_>, e: &str) -> bool {
    rustix::fs::accessat(
        dir,
        format!("{e}/partition"),
        rustix::fs::Access::EXISTS,
        rustix::fs::AtFlags::empty(),
    )
    .is_ok()
}

/// The sorted entry names of subdirectory `rel` that `keep` accepts; an
/// absent directory is empty.
fn list_dir(
    dir: BorrowedFd<'_>,
    name: &str,
    rel: &'static str,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<String>> {
    let sub: OwnedFd = match rustix::fs::openat(
        dir,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Vec::new()),
        Err(e) => return Err(sysfs_err(name, rel, e.into())),
    };
    let mut out = Vec::new();
    let entries = rustix::fs::Dir::new(sub).map_err(|e| sysfs_err(name, rel, e.into()))?;
    for entry in entries {
        let entry = entry.map_err(|e| sysfs_err(name, rel, e.into()))?;
        let Ok(e) = entry.file_name().to_str() else {
            return Err(sysfs_err(name, rel, AttrError::NotUtf8));
        };
        if e != "." && e != ".." && keep(e) {
            out.push(e.to_owned());
        }
    }
    out.sort();
    Ok(out)
}

/// A required attribute is absent: if the device's entry is gone too, the
/// device vanished; otherwise the tree is broken.
fn gone_or(class_block: BorrowedFd<'_>, name: &str, attr: &'static str, e: AttrError) -> Error {
    let exists = rustix::fs::accessat(
        class_block,
        name,
        rustix::fs::Access::EXISTS,
        rustix::fs::AtFlags::empty(),
    );
    if exists == Err(Errno::NOENT) {
        vanished(name)
    } else {
        sysfs_err(name, attr, e)
    }
}

fn vanished(name: &str) -> Error {
    Error::Vanished {
        name: name.to_owned(),
    }
}

fn sysfs_err(name: &str, attr: &'static str, source: AttrError) -> Error {
    Error::Sysfs {
        name: name.to_owned(),
        attr,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_directory_are_invalid() {
        for bad in ["", ".", "..", "a/b", "../sda", "x\0"] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        for good in ["sda", "nvme0n1p1", "dm-0", "loop7", "..x"] {
            assert!(valid_name(good), "{good:?}");
        }
    }

    #[test]
    fn devname_must_stay_under_dev() {
        let ok = b"MAJOR=8\nMINOR=1\nDEVNAME=mapper/vg-lv\nDEVTYPE=disk\n";
        assert_eq!(devname(ok).unwrap().as_deref(), Some("mapper/vg-lv"));
        assert_eq!(devname(b"MAJOR=8\n").unwrap(), None);
        for bad in [&b"DEVNAME=../etc/x"[..], b"DEVNAME=/etc/x", b"DEVNAME="] {
            assert!(devname(bad).is_err(), "{bad:?}");
        }
    }
}
