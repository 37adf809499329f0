//! What kind of filesystem a directory is on, and how much room it has.
//!
//! Benchmarks must say where they ran: an append-path figure belongs on
//! tmpfs (no device in the way), while anything about fsync or crash
//! recovery is meaningless there, because fsync on tmpfs does nothing.

use std::path::Path;

use anyhow::{Context, Result};

const TMPFS_MAGIC: u64 = 0x0102_1994;

/// The filesystem under a path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FsInfo {
    magic: u64,
    /// Bytes available to an unprivileged writer.
    pub(crate) avail_bytes: u64,
}

impl FsInfo {
    /// Looks at the filesystem that holds `path`.
    pub(crate) fn of(path: &Path) -> Result<FsInfo> {
        let st = rustix::fs::statfs(path).with_context(|| format!("statfs {}", path.display()))?;
        Ok(FsInfo {
            magic: (st.f_type as u64) & 0xffff_ffff,
            avail_bytes: st.f_bavail.saturating_mul(st.f_bsize as u64),
        })
    }

    /// Whether it is tmpfs.
    pub(crate) fn is_tmpfs(&self) -> bool {
        self.magic == TMPFS_MAGIC
    }

    /// A short name for the filesystem type.
    pub(crate) fn name(&self) -> String {
        match self.magic {
            TMPFS_MAGIC => "tmpfs".into(),
            0xEF53 => "ext4".into(),
            0x9123_683E => "btrfs".into(),
            0x5846_5342 => "xfs".into(),
            0x794C_7630 => "overlayfs".into(),
            m => format!("fs type {m:#x}"),
        }
    }
}
