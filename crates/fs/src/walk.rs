//! Walking a live tree into a [`Tree`]: every entry's id and type, read
//! through directory handles, never following a symlink and never crossing
//! into another mount.
//!
//! This is the comparison's other side after lost events, and the tree's
//! first reading at a start. Directories are opened by handle, not by
//! path, so a directory renamed during the walk is still read whole; an
//! entry that goes away while it is read is left out (its event follows).

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::{AtFlags, Dir, FileType, OFlags, StatxFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::{name_to_handle_at, open_by_handle_at};

use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tree::{Entry, Tree};

/// What a walk counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Directories read.
    pub dirs: u64,
    /// Entries seen.
    pub entries: u64,
    /// Entries left out: mount points of other mounts, and names that went
    /// away while read.
    pub skipped: u64,
}

/// Reads the live tree at `root` (a path), with the ids the journal gives
/// its objects: the root's filesystem id as `statfs` reports it, which is
/// what the events carry but on a btrfs subvolume other than the top level
/// (there events carry the top level's). For comparisons of a journal with
/// the live tree: tools, benchmarks and tests.
pub fn read_tree(root: &std::path::Path) -> Result<(Tree, WalkStats), weir_sys::Error> {
    let fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|errno| weir_sys::Error::Syscall {
        call: "open",
        errno,
    })?;
    let fsid = weir_sys::statfs::fsid(fd.as_fd())?;
    let (h, _) = name_to_handle_at(fd.as_fd(), c"", weir_sys::fanotify::fid::AT_EMPTY_PATH)?;
    let id = ObjectId::from_handle(fsid, &h);
    walk(fd.as_fd(), None, &id, fsid)
}

/// Walks the tree below directory `from` (the root when `None`), given an
/// fd of the watched root (whose id is `root_id`), with ids on the
/// filesystem whose events carry `fsid`. The tracker's sync cookies in the
/// root directory are left out. The tree returned is rooted at `from`.
pub fn walk(
    root: BorrowedFd<'_>,
    from: Option<&ObjectId>,
    root_id: &ObjectId,
    fsid: [u32; 2],
) -> Result<(Tree, WalkStats), weir_sys::Error> {
    let top = rustix::fs::statx(
        root,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE | StatxFlags::from_bits_retain(weir_sys::statx::STATX_MNT_ID_UNIQUE),
    )
    .map_err(|errno| weir_sys::Error::Syscall {
        call: "statx",
        errno,
    })?;
    // Subvolumes of one btrfs have devices of their own, so only the mount
    // tells where the tree ends.
    let mnt = top.stx_mnt_id;
    let start = from.unwrap_or(root_id);
    let mut tree = Tree::new(start.clone());
    let mut stats = WalkStats::default();
    let mut stack = vec![start.clone()];
    let mut cname = Vec::with_capacity(256);
    while let Some(dir_id) = stack.pop() {
        let fd = if &dir_id == root_id {
            match rustix::fs::openat(
                root,
                c".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(errno) => {
                    return Err(weir_sys::Error::Syscall {
                        call: "openat",
                        errno,
                    });
                }
            }
        } else {
            match open_by_handle_at(
                root,
                &dir_id.handle(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            ) {
                Ok(fd) => fd,
                Err(e) if matches!(e.errno(), Some(Errno::STALE | Errno::NOENT)) => {
                    stats.skipped += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
        };
        stats.dirs += 1;
        let dir = Dir::read_from(&fd).map_err(|errno| weir_sys::Error::Syscall {
            call: "getdents64",
            errno,
        })?;
        for de in dir {
            let de = match de {
                Ok(de) => de,
                // The directory was removed while read: its entries go
                // with it.
                Err(Errno::NOENT | Errno::STALE) => break,
                Err(errno) => {
                    return Err(weir_sys::Error::Syscall {
                        call: "getdents64",
                        errno,
                    });
                }
            };
            let name = de.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if &dir_id == root_id && crate::tracker::is_cookie(name) {
                continue;
            }
            stats.entries += 1;
            cname.clear();
            cname.extend_from_slice(name);
            cname.push(0);
            let Ok(c) = CStr::from_bytes_with_nul(&cname) else {
                continue;
            };
            let Some(entry) = entry_at(fd.as_fd(), c, fsid, mnt)? else {
                stats.skipped += 1;
                continue;
            };
            if entry.kind.is_dir() {
                stack.push(entry.id.clone());
            }
            // The parent is in the tree: it was inserted before it was
            // pushed, so this cannot fail.
            let _ = tree.insert(&dir_id, name, entry);
        }
    }
    Ok((tree, stats))
}

/// The entry `name` of `dir`; `None` when it is gone or on another mount.
pub(crate) fn entry_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    fsid: [u32; 2],
    mnt: u64,
) -> Result<Option<Entry>, weir_sys::Error> {
    let st = match rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
        StatxFlags::TYPE | StatxFlags::from_bits_retain(weir_sys::statx::STATX_MNT_ID_UNIQUE),
    ) {
        Ok(st) => st,
        Err(Errno::NOENT | Errno::STALE) => return Ok(None),
        Err(errno) => {
            return Err(weir_sys::Error::Syscall {
                call: "statx",
                errno,
            });
        }
    };
    if st.stx_mnt_id != mnt {
        return Ok(None);
    }
    let kind = Kind::from_file_type(FileType::from_raw_mode(u32::from(st.stx_mode)));
    match name_to_handle_at(dir, name, 0) {
        Ok((h, _)) => Ok(Some(Entry {
            id: ObjectId::from_handle(fsid, &h),
            kind,
        })),
        Err(e) if matches!(e.errno(), Some(Errno::NOENT | Errno::STALE)) => Ok(None),
        Err(e) => Err(e),
    }
}
