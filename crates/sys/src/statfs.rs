//! `statfs(2)`'s filesystem id (`f_fsid`), in the form fanotify's file-id
//! records carry it, so a change journal can tell which of its marks an
//! event came from.
//!
//! rustix's `fstatvfs` gives `f_fsid` as one `u64`; its raw Linux backend
//! builds it from `fstatfs`'s `__kernel_fsid_t` as `val[0] | val[1] << 32`,
//! so the two words come back out of it without `unsafe` (a unit test holds
//! this against `libc`'s `fstatfs`).

use std::os::fd::BorrowedFd;

use crate::{Error, Result};

/// The id of the filesystem `fd` is on: `fstatfs(2)`'s `f_fsid.val`, the
/// two words in the order fanotify's file-id records carry them
/// ([`fanotify::fid::Fid::fsid`](crate::fanotify::fid::Fid::fsid)).
///
/// It is the id of the superblock's root as the filesystem gives it: on
/// btrfs a mount of a subvolume other than the top level has an id of its
/// own, while a filesystem mark reports every event with the top level's.
pub fn fsid(fd: BorrowedFd<'_>) -> Result<[u32; 2]> {
    let st = rustix::fs::fstatvfs(fd).map_err(Error::syscall("fstatfs"))?;
    // The low word is val[0]; the truncating casts are the split.
    Ok([st.f_fsid as u32, (st.f_fsid >> 32) as u32])
}

#[cfg(test)]
mod tests {
    use std::os::fd::{AsFd, AsRawFd};

    use rustix::fs::{Mode, OFlags};

    use super::*;

    /// The words as `fstatfs` gives them through `libc`, whose `fsid_t`
    /// keeps them private.
    fn libc_fsid(fd: BorrowedFd<'_>) -> [u32; 2] {
        let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
        // SAFETY: `fd` is open for the call (borrowed); `st` is room for
        // the `struct statfs` the call fills.
        let r = unsafe { libc::fstatfs(fd.as_raw_fd(), st.as_mut_ptr()) };
        assert_eq!(r, 0, "fstatfs: {}", std::io::Error::last_os_error());
        // SAFETY: the call succeeded, so it filled `st`.
        let st = unsafe { st.assume_init() };
        // SAFETY: `fsid_t` is `#[repr(C)] struct { c_int __val[2]; }`, the
        // layout of `[i32; 2]`; transmute checks that the sizes agree.
        let val: [i32; 2] = unsafe { std::mem::transmute(st.f_fsid) };
        val.map(i32::cast_unsigned)
    }

    #[test]
    fn the_words_are_statfs_ones_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for p in [std::path::Path::new("/"), dir.path()] {
            let fd =
                rustix::fs::open(p, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
            assert_eq!(fsid(fd.as_fd()).unwrap(), libc_fsid(fd.as_fd()), "{p:?}");
        }
    }
}
