//! `statx(2)` with `STATX_MNT_ID_UNIQUE` (Linux 6.8): which mount a path is
//! on, as the unique 64-bit id that listmount, statmount and fanotify use.
//!
//! rustix 1.1 has `statx` but no named `STATX_MNT_ID_UNIQUE` flag; its
//! `StatxFlags` keeps unknown bits, so we pass the bit ourselves and need no
//! `unsafe` here.

use std::path::Path;

use rustix::fs::{AtFlags, CWD, StatxFlags};

use crate::{Error, Result};

/// `STATX_MNT_ID`: the old, reusable 32-bit mount id (5.8).
pub const STATX_MNT_ID: u32 = 0x0000_1000;
/// `STATX_MNT_ID_UNIQUE`: the unique 64-bit mount id (6.8).
pub const STATX_MNT_ID_UNIQUE: u32 = 0x0000_4000;

/// The unique 64-bit id of the mount `path` is on.
///
/// Symlinks are followed; an automount point is not triggered
/// (`AT_NO_AUTOMOUNT`), so asking has no side effect. A relative path is
/// taken from the current directory. Fails with [`Error::Unsupported`] when
/// the kernel (before 6.8) does not return the unique id.
pub fn mount_id_unique(path: &Path) -> Result<u64> {
    let st = rustix::fs::statx(
        CWD,
        path,
        AtFlags::NO_AUTOMOUNT,
        StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE),
    )
    .map_err(Error::syscall("statx"))?;
    if st.stx_mask & STATX_MNT_ID_UNIQUE == 0 {
        return Err(Error::Unsupported {
            what: "statx STATX_MNT_ID_UNIQUE",
        });
    }
    Ok(st.stx_mnt_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_differ_from_old_ones_and_between_mounts() {
        let root = mount_id_unique(Path::new("/")).unwrap();
        let proc_ = mount_id_unique(Path::new("/proc")).unwrap();
        assert_ne!(root, proc_);
        // The unique ids start above 2^31, out of the old ids' range.
        assert!(root > u64::from(u32::MAX >> 1), "{root}");
        let old = rustix::fs::statx(
            CWD,
            "/",
            AtFlags::empty(),
            StatxFlags::from_bits_retain(STATX_MNT_ID),
        )
        .unwrap();
        assert_ne!(old.stx_mnt_id, root);
    }

    #[test]
    fn missing_path_is_enoent() {
        let e = mount_id_unique(Path::new("/nonexistent/weir-sys")).unwrap_err();
        assert_eq!(e.errno(), Some(rustix::io::Errno::NOENT));
    }
}
