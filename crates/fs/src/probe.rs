//! Looking at the live tree through file handles: what an entry holds now,
//! read through its directory's handle (`open_by_handle_at`, then `statx`
//! and `name_to_handle_at` at the name), so that a directory renamed since
//! the event is still found.
//!
//! The tracker asks only where an event is ambiguous, so the cost is paid
//! per doubt, not per event; the directories asked about last keep their
//! fds (a few dozen), since a storm touches few directories many times.

use std::collections::{HashMap, VecDeque};
use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, OFlags, StatxFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::{name_to_handle_at, open_by_handle_at};

use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tree::Entry;

/// Directory fds kept open.
const CACHED_DIRS: usize = 64;

/// What was found at a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The entry there now.
    Entry(Entry),
    /// Nothing is there (or its directory is gone).
    Absent,
}

/// Live lookups on one filesystem.
#[derive(Debug)]
pub(crate) struct Probe {
    /// Any fd on the filesystem: the root's. Handles are decoded on its
    /// superblock.
    mount: OwnedFd,
    fsid: [u32; 2],
    dirs: HashMap<ObjectId, OwnedFd>,
    order: VecDeque<ObjectId>,
    name: Vec<u8>,
    /// Lookups made, for the counters.
    pub(crate) lookups: u64,
}

impl Probe {
    pub(crate) fn new(mount: OwnedFd, fsid: [u32; 2]) -> Probe {
        Probe {
            mount,
            fsid,
            dirs: HashMap::new(),
            order: VecDeque::new(),
            name: Vec::with_capacity(256),
            lookups: 0,
        }
    }

    /// The fd lookups decode handles on.
    pub(crate) fn mount(&self) -> BorrowedFd<'_> {
        self.mount.as_fd()
    }

    /// An fd of directory `dir`; `None` once it is gone.
    fn dir(&mut self, dir: &ObjectId) -> Result<Option<BorrowedFd<'_>>, weir_sys::Error> {
        if !self.dirs.contains_key(dir) {
            let fd = match open_by_handle_at(
                self.mount.as_fd(),
                &dir.handle(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            ) {
                Ok(fd) => fd,
                Err(e) if matches!(e.errno(), Some(Errno::STALE | Errno::NOENT)) => {
                    return Ok(None);
                }
                Err(e) => return Err(e),
            };
            if self.order.len() >= CACHED_DIRS
                && let Some(old) = self.order.pop_front()
            {
                self.dirs.remove(&old);
            }
            self.order.push_back(dir.clone());
            self.dirs.insert(dir.clone(), fd);
        }
        Ok(self.dirs.get(dir).map(|fd| fd.as_fd()))
    }

    /// Forgets a directory's fd (it was removed).
    pub(crate) fn forget(&mut self, dir: &ObjectId) {
        if self.dirs.remove(dir).is_some() {
            self.order.retain(|d| d != dir);
        }
    }

    /// What `name` in `dir` holds now.
    pub(crate) fn lookup(&mut self, dir: &ObjectId, name: &[u8]) -> Result<Found, weir_sys::Error> {
        self.lookups += 1;
        let fsid = self.fsid;
        let mut cname = std::mem::take(&mut self.name);
        cname.clear();
        cname.extend_from_slice(name);
        cname.push(0);
        let r = self.lookup_c(dir, &cname, fsid);
        self.name = cname;
        r
    }

    fn lookup_c(
        &mut self,
        dir: &ObjectId,
        cname: &[u8],
        fsid: [u32; 2],
    ) -> Result<Found, weir_sys::Error> {
        let Ok(c) = CStr::from_bytes_with_nul(cname) else {
            // A name with a NUL inside names nothing.
            return Ok(Found::Absent);
        };
        let Some(fd) = self.dir(dir)? else {
            return Ok(Found::Absent);
        };
        let st = match rustix::fs::statx(
            fd,
            c,
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
            StatxFlags::TYPE,
        ) {
            Ok(st) => st,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::STALE) => return Ok(Found::Absent),
            Err(errno) => {
                return Err(weir_sys::Error::Syscall {
                    call: "statx",
                    errno,
                });
            }
        };
        let kind = Kind::from_file_type(FileType::from_raw_mode(u32::from(st.stx_mode)));
        match name_to_handle_at(fd, c, 0) {
            Ok((h, _)) => Ok(Found::Entry(Entry {
                id: ObjectId::from_handle(fsid, &h),
                kind,
            })),
            Err(e) if matches!(e.errno(), Some(Errno::NOENT | Errno::STALE)) => Ok(Found::Absent),
            Err(e) => Err(e),
        }
    }

    /// The kind of object `id` at `name` in `dir`, if it is still there.
    pub(crate) fn kind_of(&mut self, dir: &ObjectId, name: &[u8], id: &ObjectId) -> Kind {
        match self.lookup(dir, name) {
            Ok(Found::Entry(e)) if &e.id == id => e.kind,
            _ => Kind::Unknown,
        }
    }
}

impl Probe {
    /// The kind of object `id`, read through its handle wherever its names
    /// are now; `Unknown` once it is gone.
    pub(crate) fn kind_by_handle(&mut self, id: &ObjectId) -> Kind {
        self.lookups += 1;
        match open_by_handle_at(
            self.mount.as_fd(),
            &id.handle(),
            OFlags::PATH | OFlags::CLOEXEC,
        ) {
            Ok(fd) => match rustix::fs::fstat(&fd) {
                Ok(st) => Kind::from_file_type(FileType::from_raw_mode(st.st_mode)),
                Err(_) => Kind::Unknown,
            },
            Err(_) => Kind::Unknown,
        }
    }

    /// How many names object `id` has now (0 or `None` once it is gone,
    /// or only open).
    pub(crate) fn nlink_by_handle(&mut self, id: &ObjectId) -> Option<u64> {
        self.lookups += 1;
        let fd = open_by_handle_at(
            self.mount.as_fd(),
            &id.handle(),
            OFlags::PATH | OFlags::CLOEXEC,
        )
        .ok()?;
        rustix::fs::fstat(&fd).ok().map(|st| st.st_nlink)
    }

    /// Whether directory `id` is the root of a btrfs subvolume (its inode
    /// number is `BTRFS_FIRST_FREE_OBJECTID`, 256): a new one is a
    /// subvolume or a snapshot, whose contents no event reports.
    pub(crate) fn is_subvolume_root(&mut self, id: &ObjectId) -> bool {
        match open_by_handle_at(
            self.mount.as_fd(),
            &id.handle(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        ) {
            Ok(fd) => rustix::fs::fstat(&fd).is_ok_and(|st| st.st_ino == 256),
            Err(_) => false,
        }
    }
}
