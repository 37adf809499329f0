//! File handles: `name_to_handle_at(2)` and `open_by_handle_at(2)`, the ids
//! that fanotify's file-id records carry, taken from a path and turned back
//! into an fd.
//!
//! rustix has neither call, so both go through `libc` with a `struct
//! file_handle` laid out in a buffer of our own: the header and
//! `MAX_HANDLE_SZ` bytes, 8-byte aligned, so the kernel never writes past
//! it.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use rustix::fs::OFlags;

use crate::{Error, Result};

/// `MAX_HANDLE_SZ`: the most bytes a handle holds.
pub const MAX_HANDLE_SZ: usize = 128;
/// `AT_HANDLE_MNT_ID_UNIQUE` (6.12): report the unique 64-bit mount id.
pub const AT_HANDLE_MNT_ID_UNIQUE: i32 = 0x001;
/// `AT_HANDLE_FID` (6.5): an id for comparison only, which the filesystem
/// need not be able to open again; it never fails for want of export
/// support.
pub const AT_HANDLE_FID: i32 = 0x200;
/// `AT_SYMLINK_FOLLOW`: follow a final symlink.
pub const AT_SYMLINK_FOLLOW: i32 = 0x400;
/// `AT_EMPTY_PATH`: an empty path names the dirfd itself.
pub const AT_EMPTY_PATH: i32 = 0x1000;

/// An owned file handle: the filesystem's type tag and its opaque bytes
/// (at most [`MAX_HANDLE_SZ`]). Bytes past `len` are always zero, so the
/// derived comparisons and hash see only the handle.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileHandle {
    handle_type: i32,
    len: u8,
    bytes: [u8; MAX_HANDLE_SZ],
}

impl FileHandle {
    /// A handle of `handle_type` with `bytes`; `None` when they are more
    /// than [`MAX_HANDLE_SZ`].
    pub fn new(handle_type: i32, bytes: &[u8]) -> Option<FileHandle> {
        let len = u8::try_from(bytes.len())
            .ok()
            .filter(|&n| usize::from(n) <= MAX_HANDLE_SZ)?;
        let mut h = FileHandle {
            handle_type,
            len,
            bytes: [0; MAX_HANDLE_SZ],
        };
        h.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(h)
    }

    /// The filesystem's handle type (`FILEID_*`).
    pub fn handle_type(&self) -> i32 {
        self.handle_type
    }

    /// The opaque bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for FileHandle {
    // Hex, as the kernel's own tools print handles.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileHandle({}:", self.handle_type)?;
        for b in self.bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// `struct file_handle` with room for the largest handle; the alignment
/// is the kernel struct's (its `int` fields) and more.
#[repr(C, align(8))]
struct RawHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; MAX_HANDLE_SZ],
}

/// `name_to_handle_at(dirfd, path, ..., flags)`: the handle of `path`
/// (taken from `dirfd`; with [`AT_EMPTY_PATH`] and an empty path, of
/// `dirfd` itself) and the id of the mount it was found on: the unique
/// 64-bit id with [`AT_HANDLE_MNT_ID_UNIQUE`], else the old reusable one.
///
/// `EOPNOTSUPP` when the filesystem cannot encode handles (unless
/// [`AT_HANDLE_FID`]); `EINVAL` for flags the kernel does not know.
pub fn name_to_handle_at(
    dirfd: BorrowedFd<'_>,
    path: &CStr,
    flags: i32,
) -> Result<(FileHandle, u64)> {
    let mut raw = RawHandle {
        handle_bytes: MAX_HANDLE_SZ as u32,
        handle_type: 0,
        f_handle: [0; MAX_HANDLE_SZ],
    };
    // Room for either answer: an `int`, or a `u64` with the unique flag;
    // both are written at its start.
    let mut mnt: u64 = 0;
    // SAFETY: `dirfd` is open for the call (borrowed); `path` is
    // NUL-terminated; `raw` is a `struct file_handle` whose `handle_bytes`
    // says how much room follows the header (MAX_HANDLE_SZ, all ours), so
    // the kernel writes inside it; `mnt` is 8 bytes, 8-aligned, enough for
    // the `int` or `u64` the kernel writes there; all live past the call.
    let r = unsafe {
        libc::name_to_handle_at(
            dirfd.as_raw_fd(),
            path.as_ptr(),
            (&raw mut raw).cast::<libc::file_handle>(),
            (&raw mut mnt).cast::<libc::c_int>(),
            flags,
        )
    };
    if r < 0 {
        return Err(Error::last_os("name_to_handle_at"));
    }
    let n = crate::bytes::len(raw.handle_bytes);
    let handle = raw
        .f_handle
        .get(..n)
        .and_then(|b| FileHandle::new(raw.handle_type, b))
        .ok_or(Error::Malformed {
            what: "name_to_handle_at handle_bytes above MAX_HANDLE_SZ",
        })?;
    let mount_id = if flags & AT_HANDLE_MNT_ID_UNIQUE != 0 {
        mnt
    } else {
        let b = mnt.to_ne_bytes();
        let id = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
        u64::try_from(id).unwrap_or(0)
    };
    Ok((handle, mount_id))
}

/// `open_by_handle_at(mount_fd, handle, flags)`: an fd for the object
/// `handle` names on the filesystem of `mount_fd` (any fd on it).
///
/// The object being gone is `ESTALE` (`Error::errno() ==
/// Some(Errno::STALE)`), distinct from `EPERM` (needs
/// `CAP_DAC_READ_SEARCH`) and `EOPNOTSUPP` (a handle made with
/// [`AT_HANDLE_FID`] on a filesystem that cannot decode it).
pub fn open_by_handle_at(
    mount_fd: BorrowedFd<'_>,
    handle: &FileHandle,
    flags: OFlags,
) -> Result<OwnedFd> {
    let mut raw = RawHandle {
        handle_bytes: u32::from(handle.len),
        handle_type: handle.handle_type,
        f_handle: handle.bytes,
    };
    let Ok(bits) = i32::try_from(flags.bits()) else {
        return Err(Error::Syscall {
            call: "open_by_handle_at",
            errno: rustix::io::Errno::INVAL,
        });
    };
    // SAFETY: `mount_fd` is open for the call (borrowed); `raw` is a
    // `struct file_handle` whose `handle_bytes` (at most MAX_HANDLE_SZ)
    // bytes follow its header inside the buffer; the kernel only reads it.
    let fd = unsafe {
        libc::open_by_handle_at(
            mount_fd.as_raw_fd(),
            (&raw mut raw).cast::<libc::file_handle>(),
            bits,
        )
    };
    if fd < 0 {
        return Err(Error::last_os("open_by_handle_at"));
    }
    // SAFETY: `fd` is a new fd that nothing else refers to; we take it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    #[test]
    fn handles_are_bounded_and_compare_by_their_bytes() {
        assert!(FileHandle::new(1, &[0; MAX_HANDLE_SZ + 1]).is_none());
        let h = FileHandle::new(1, &[0xab; MAX_HANDLE_SZ]).unwrap();
        assert_eq!(h.bytes().len(), MAX_HANDLE_SZ);
        let a = FileHandle::new(1, &[1, 2, 3]).unwrap();
        assert_eq!(a.bytes(), [1, 2, 3]);
        assert_eq!(a.handle_type(), 1);
        assert_ne!(a, FileHandle::new(1, &[1, 2, 3, 0]).unwrap());
        assert_ne!(a, FileHandle::new(2, &[1, 2, 3]).unwrap());
        assert_eq!(format!("{a:?}"), "FileHandle(1:010203)");
    }

    #[test]
    fn a_handle_opens_its_directory_again() {
        let dir = tempfile::tempdir().unwrap();
        let d = rustix::fs::open(dir.path(), OFlags::DIRECTORY, rustix::fs::Mode::empty()).unwrap();
        let (h, mnt) = match name_to_handle_at(d.as_fd(), c"", AT_EMPTY_PATH) {
            Ok(x) => x,
            // A temporary directory on a filesystem without handles.
            Err(e) if e.errno() == Some(rustix::io::Errno::OPNOTSUPP) => return,
            Err(e) => panic!("{e}"),
        };
        assert!(mnt > 0);
        let (h2, _) = name_to_handle_at(
            rustix::fs::CWD,
            &std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap(),
            0,
        )
        .unwrap();
        assert_eq!(h, h2);
        match open_by_handle_at(d.as_fd(), &h, OFlags::DIRECTORY | OFlags::CLOEXEC) {
            Ok(fd) => {
                let (a, b) = (
                    rustix::fs::fstat(&fd).unwrap(),
                    rustix::fs::fstat(&d).unwrap(),
                );
                assert_eq!((a.st_dev, a.st_ino), (b.st_dev, b.st_ino));
            }
            // Not root: opening by handle needs CAP_DAC_READ_SEARCH.
            Err(e) => assert_eq!(e.errno(), Some(rustix::io::Errno::PERM), "{e}"),
        }
    }
}
