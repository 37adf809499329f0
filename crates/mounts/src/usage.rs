//! How full each mounted filesystem is: statvfs(2) of every mount point, as
//! findmnt reads it for its SIZE, AVAIL, USED and USE% columns.
//!
//! This is the one step of `weir mounts` that touches the filesystems
//! themselves, so it is kept apart from the table (which never changes
//! when a file is written) and from the renderer (which stays pure): the
//! caller gathers a [`Usages`] right before rendering and hands it over.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::Mount;

/// One statvfs(2) reading, in the units the kernel gives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// The fragment size: the unit of the block counts (`f_frsize`).
    pub frsize: u64,
    /// Blocks in the filesystem (`f_blocks`).
    pub blocks: u64,
    /// Free blocks (`f_bfree`).
    pub bfree: u64,
    /// Free blocks an unprivileged user may take (`f_bavail`).
    pub bavail: u64,
}

impl Usage {
    /// The size in bytes (findmnt's SIZE).
    pub fn size(&self) -> u64 {
        self.frsize.wrapping_mul(self.blocks)
    }

    /// Bytes an unprivileged user may still take (findmnt's AVAIL).
    pub fn avail(&self) -> u64 {
        self.frsize.wrapping_mul(self.bavail)
    }

    /// Bytes in use, reserved blocks excluded (findmnt's USED).
    pub fn used(&self) -> u64 {
        self.frsize
            .wrapping_mul(self.blocks.wrapping_sub(self.bfree))
    }
}

/// The readings by mount id. A mount whose statvfs failed (no permission
/// to its mount point, a stale network filesystem, a path past `PATH_MAX`)
/// has none, and findmnt shows it with empty cells.
pub type Usages = HashMap<u64, Usage>;

/// statvfs(2) of each mount's mount point. A path names the topmost mount
/// there, so an overmounted filesystem reports its cover's figures, as
/// findmnt does. A hung network filesystem can block this call: callers
/// gather only when a usage column is asked for.
pub fn gather(mounts: &[Mount]) -> Usages {
    mounts
        .iter()
        .filter_map(|m| {
            let v = rustix::fs::statvfs(OsStr::from_bytes(&m.mount_point)).ok()?;
            let usage = Usage {
                frsize: v.f_frsize,
                blocks: v.f_blocks,
                bfree: v.f_bfree,
                bavail: v.f_bavail,
            };
            Some((m.id, usage))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_blocks() {
        let u = Usage {
            frsize: 4096,
            blocks: 100,
            bfree: 40,
            bavail: 30,
        };
        assert_eq!((u.size(), u.avail(), u.used()), (409_600, 122_880, 245_760));
    }

    #[test]
    fn reads_the_root() {
        let root = crate::snapshot(crate::BackendChoice::Mountinfo)
            .unwrap()
            .mounts;
        let usages = gather(&root);
        let slash = root.iter().find(|m| &*m.mount_point == b"/").unwrap();
        assert!(usages.get(&slash.id).is_some_and(|u| u.frsize > 0));
    }
}
