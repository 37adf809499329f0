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
use std::time::Instant;

use rustix::fs::{AtFlags, Dir, FileType, OFlags, StatxFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::{name_to_handle_at, open_by_handle_at};

use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tree::{DirTimes, Entry, Tree};

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
    let mut w = Walk::new(root, from, root_id, fsid)?;
    w.step(root, None)?;
    Ok(w.finish())
}

/// How many entries a walk reads between looks at the clock.
const CLOCK_EVERY: u32 = 32;

/// A walk that can stop at a deadline and go on later, as [`walk`] does in
/// one go: the tracker's first reading of a root, so that a start need not
/// wait for a tree of any size. Its state is the directories left to read
/// and the one being read; every step takes the root's fd again, so a walk
/// can wait in another thread.
#[derive(Debug)]
pub struct Walk {
    root_id: ObjectId,
    fsid: [u32; 2],
    /// The root's mount: the walk stays on it.
    mnt: u64,
    tree: Tree,
    stats: WalkStats,
    stack: Vec<ObjectId>,
    /// The directory being read, and its id.
    open: Option<(ObjectId, Dir)>,
    cname: Vec<u8>,
}

impl Walk {
    /// A walk of the tree below `from` (the root when `None`), nothing read
    /// yet; the arguments are [`walk`]'s.
    pub fn new(
        root: BorrowedFd<'_>,
        from: Option<&ObjectId>,
        root_id: &ObjectId,
        fsid: [u32; 2],
    ) -> Result<Walk, weir_sys::Error> {
        let top = rustix::fs::statx(root, c"", AtFlags::EMPTY_PATH, mask()).map_err(|errno| {
            weir_sys::Error::Syscall {
                call: "statx",
                errno,
            }
        })?;
        let start = from.unwrap_or(root_id);
        let mut tree = Tree::new(start.clone());
        if from.is_none() {
            // Taken before the root is read, as every directory's is.
            if let Some(t) = settled(times_of(&top)) {
                tree.set_dir_times(start, t);
            }
        }
        Ok(Walk {
            root_id: root_id.clone(),
            fsid,
            // Subvolumes of one btrfs have devices of their own, so only
            // the mount tells where the tree ends.
            mnt: top.stx_mnt_id,
            tree,
            stats: WalkStats::default(),
            stack: vec![start.clone()],
            open: None,
            cname: Vec::with_capacity(256),
        })
    }

    /// What the walk has counted so far.
    pub fn stats(&self) -> WalkStats {
        self.stats
    }

    /// Reads on until the walk is done (`true`) or `until` has passed
    /// (`false`: call again). `root` is the fd [`Walk::new`] was given.
    pub fn step(
        &mut self,
        root: BorrowedFd<'_>,
        until: Option<Instant>,
    ) -> Result<bool, weir_sys::Error> {
        let mut since_clock = 0u32;
        loop {
            if let Some(t) = until {
                since_clock += 1;
                if since_clock >= CLOCK_EVERY {
                    since_clock = 0;
                    if Instant::now() >= t {
                        return Ok(false);
                    }
                }
            }
            let Some((dir_id, dir)) = self.open.as_mut() else {
                let Some(next) = self.stack.pop() else {
                    return Ok(true);
                };
                if let Some(d) = self.open_dir(root, &next)? {
                    self.stats.dirs += 1;
                    self.open = Some((next, d));
                }
                continue;
            };
            let de = match dir.next() {
                None => {
                    self.open = None;
                    continue;
                }
                Some(Ok(de)) => de,
                // The directory was removed while read: its entries go
                // with it.
                Some(Err(Errno::NOENT | Errno::STALE)) => {
                    self.open = None;
                    continue;
                }
                Some(Err(errno)) => {
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
            if *dir_id == self.root_id && crate::tracker::is_cookie(name) {
                continue;
            }
            self.stats.entries += 1;
            self.cname.clear();
            self.cname.extend_from_slice(name);
            self.cname.push(0);
            let Ok(c) = CStr::from_bytes_with_nul(&self.cname) else {
                continue;
            };
            let fd = dir.fd().map_err(|errno| weir_sys::Error::Syscall {
                call: "getdents64",
                errno,
            })?;
            let Some((entry, times)) = entry_at(fd, c, self.fsid, self.mnt)? else {
                self.stats.skipped += 1;
                continue;
            };
            let dir = entry.kind.is_dir().then(|| entry.id.clone());
            // The parent is in the tree: it was inserted before it was
            // pushed, so this cannot fail.
            let _ = self.tree.insert(dir_id, name, entry);
            if let Some(id) = dir {
                // Its times now, before it is read (it is read later).
                if let Some(t) = settled(times) {
                    self.tree.set_dir_times(&id, t);
                }
                self.stack.push(id);
            }
        }
    }

    /// The tree read, and what the walk counted.
    pub fn finish(self) -> (Tree, WalkStats) {
        (self.tree, self.stats)
    }

    /// Opens directory `dir_id` for reading; `None` when it is gone.
    fn open_dir(
        &self,
        root: BorrowedFd<'_>,
        dir_id: &ObjectId,
    ) -> Result<Option<Dir>, weir_sys::Error> {
        let fd = if *dir_id == self.root_id {
            rustix::fs::openat(
                root,
                c".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(|errno| weir_sys::Error::Syscall {
                call: "openat",
                errno,
            })?
        } else {
            match open_by_handle_at(
                root,
                &dir_id.handle(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            ) {
                Ok(fd) => fd,
                Err(e) if matches!(e.errno(), Some(Errno::STALE | Errno::NOENT)) => {
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        };
        Dir::new(fd)
            .map(Some)
            .map_err(|errno| weir_sys::Error::Syscall {
                call: "getdents64",
                errno,
            })
    }
}

/// What a walk asks `statx`: the type, the mount, and the times a
/// directory's are kept of.
fn mask() -> StatxFlags {
    StatxFlags::TYPE
        | StatxFlags::MTIME
        | StatxFlags::CTIME
        | StatxFlags::from_bits_retain(weir_sys::statx::STATX_MNT_ID_UNIQUE)
}

fn times_of(st: &rustix::fs::Statx) -> DirTimes {
    DirTimes {
        mtime: (st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec),
        ctime: (st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec),
    }
}

/// How long after its last change a directory's times are trusted: the
/// kernel stamps changes from a clock that moves a tick at a time (up to
/// 10 ms), so a change in the same tick as a `statx` may leave the times
/// it saw unmoved. As git does for its index, times this recent are not
/// kept, and the directory is read again.
const SETTLED_NS: i64 = 100_000_000;

/// `t`, if its last change is old enough to be trusted (see
/// [`SETTLED_NS`]).
pub(crate) fn settled(t: DirTimes) -> Option<DirTimes> {
    let ns = |(s, n): (i64, u32)| i128::from(s) * 1_000_000_000 + i128::from(n);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    (now - ns(t.mtime).max(ns(t.ctime)) >= i128::from(SETTLED_NS)).then_some(t)
}

/// The times of the directory open at `fd`.
pub(crate) fn times_at(fd: BorrowedFd<'_>) -> Result<DirTimes, weir_sys::Error> {
    rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, mask())
        .map(|st| times_of(&st))
        .map_err(|errno| weir_sys::Error::Syscall {
            call: "statx",
            errno,
        })
}

/// The times of the directory `name` in `dir`, by one `statx`; `None`
/// when it is gone, not a directory, or on another mount (something is
/// mounted on it).
pub(crate) fn dir_times_in(
    dir: BorrowedFd<'_>,
    name: &CStr,
    mnt: u64,
) -> Result<Option<DirTimes>, weir_sys::Error> {
    match rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
        mask(),
    ) {
        Ok(st) => Ok((st.stx_mnt_id == mnt
            && FileType::from_raw_mode(u32::from(st.stx_mode)) == FileType::Directory)
            .then(|| times_of(&st))),
        Err(Errno::NOENT | Errno::STALE | Errno::NOTDIR) => Ok(None),
        Err(errno) => Err(weir_sys::Error::Syscall {
            call: "statx",
            errno,
        }),
    }
}

/// The entry `name` of `dir`, with its times (a directory's are kept);
/// `None` when it is gone or on another mount.
pub(crate) fn entry_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    fsid: [u32; 2],
    mnt: u64,
) -> Result<Option<(Entry, DirTimes)>, weir_sys::Error> {
    let Some((kind, times)) = kind_at(dir, name, mnt)? else {
        return Ok(None);
    };
    match name_to_handle_at(dir, name, 0) {
        Ok((h, _)) => Ok(Some((
            Entry {
                id: ObjectId::from_handle(fsid, &h),
                kind,
            },
            times,
        ))),
        Err(e) if matches!(e.errno(), Some(Errno::NOENT | Errno::STALE)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The kind and times of entry `name` of `dir`, without its id (one
/// `statx`); `None` when it is gone or on another mount.
pub(crate) fn kind_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    mnt: u64,
) -> Result<Option<(Kind, DirTimes)>, weir_sys::Error> {
    let st = match rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
        mask(),
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
    Ok(Some((kind, times_of(&st))))
}
