//! The live tree from the tree as last logged, reading only the
//! directories whose times moved: a restart's comparison, namespace-exact,
//! at the cost of a `statx` per directory and a read of those changed.
//!
//! A change to a directory's entries (a create, a removal, a rename in or
//! out, a link) moves the directory's mtime and ctime on ext4, xfs, btrfs
//! and tmpfs. A directory whose times are those the tree keeps for it
//! (taken before its entries were read, and forgotten by any change the
//! tree applied since) holds the entries the tree says: its subdirectories
//! are the tree's, and only they are looked at. Any other directory (its
//! times moved, or are not known) is read, and so is everything new below
//! it. Renames while nothing watched keep their ids: a directory moved is
//! found in its new parent (whose times moved) and is the same object.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Dir, OFlags, StatxFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::open_by_handle_at;

use crate::id::ObjectId;
use crate::tree::{DirTimes, Entry, Set, Tree};
use crate::walk::{dir_times_in, entry_at, times_at};

/// What a rescan counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RescanStats {
    /// Directories whose times were looked at.
    pub checked: u64,
    /// Directories read (their times moved, or were not known).
    pub read: u64,
    /// Entries seen in the directories read.
    pub entries: u64,
}

/// A file whose inode changed at or after the moment a content-exact
/// rescan asked about (its ctime), in a directory it read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changed {
    /// Its directory.
    pub parent: ObjectId,
    /// Its name there.
    pub name: Box<[u8]>,
    /// The object.
    pub id: ObjectId,
    /// Whether its content changed too (its mtime), not only attributes.
    pub written: bool,
}

/// A directory read: its id and its entries.
type Listing = (ObjectId, Vec<(Box<[u8]>, Entry)>);

/// What a rescan found.
#[derive(Debug)]
#[non_exhaustive]
pub struct Rescan {
    /// The live tree.
    pub live: Tree,
    /// What it counted.
    pub stats: RescanStats,
    /// The directories read.
    pub read: Vec<ObjectId>,
    /// The directories whose entries may differ between the tree as
    /// logged and the live one: those read, and those of subtrees gone.
    pub scope: Set<ObjectId>,
    /// With `content`, the files (not directories) whose ctime is at or
    /// after it, in directory order.
    pub changed: Vec<Changed>,
}

/// The live tree below the root open at `root` (id `root_id`, events with
/// `fsid`), from `known`, the tree as last logged.
pub fn rescan(
    root: BorrowedFd<'_>,
    known: &Tree,
    root_id: &ObjectId,
    fsid: [u32; 2],
) -> Result<Rescan, weir_sys::Error> {
    rescan_with(root, known, root_id, fsid, &|d| known.dir_times(d), None)
}

/// As [`rescan`], with each directory's times as `times` says (a running
/// tracker's tree has handed most of its times to the persistent copy).
/// With `content` (seconds and nanoseconds), content-exact: every
/// directory is read, and the files whose ctime is at or after `content`
/// are in [`Rescan::changed`].
pub fn rescan_with(
    root: BorrowedFd<'_>,
    known: &Tree,
    root_id: &ObjectId,
    fsid: [u32; 2],
    times: &dyn Fn(&ObjectId) -> Option<DirTimes>,
    content: Option<(i64, u32)>,
) -> Result<Rescan, weir_sys::Error> {
    rescan_counted(root, known, root_id, fsid, times, content, &|_| {})
}

/// How many directories a rescan looks at between two reports of its
/// progress.
const REPORT_EVERY: u64 = 256;

/// As [`rescan_with`], telling `checked` how many directories it has
/// looked at as it goes.
pub(crate) fn rescan_counted(
    root: BorrowedFd<'_>,
    known: &Tree,
    root_id: &ObjectId,
    fsid: [u32; 2],
    times: &dyn Fn(&ObjectId) -> Option<DirTimes>,
    content: Option<(i64, u32)>,
    checked: &dyn Fn(u64),
) -> Result<Rescan, weir_sys::Error> {
    let mnt = rustix::fs::statx(
        root,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::from_bits_retain(weir_sys::statx::STATX_MNT_ID_UNIQUE),
    )
    .map_err(|errno| sys("statx", errno))?
    .stx_mnt_id;
    let mut stats = RescanStats::default();
    let mut listings: Vec<Listing> = Vec::new();
    let mut read = Vec::new();
    let mut seen: Set<ObjectId> = Set::default();
    // Each directory with its times when its parent's handle gave them.
    let mut queue: VecDeque<(ObjectId, Option<DirTimes>)> =
        VecDeque::from([(root_id.clone(), None)]);
    let mut cname = Vec::with_capacity(256);
    let mut changed = Vec::new();
    let unchanged = |d: &ObjectId, t: DirTimes| content.is_none() && times(d) == Some(t);
    // A directory found unchanged through its parent, with no directory
    // below it, needs nothing more: most directories are such leaves, and
    // this spares each an open by handle.
    let visit = |queue: &mut VecDeque<_>, stats: &mut RescanStats, c, t: Option<DirTimes>| {
        if let Some(t) = t
            && unchanged(&c, t)
            && !known.entries_of(&c).any(|(_, e)| e.kind.is_dir())
        {
            stats.checked += 1;
            return;
        }
        queue.push_back((c, t));
    };
    let mut reported = 0;
    while let Some((d, pre)) = queue.pop_front() {
        if stats.checked >= reported + REPORT_EVERY {
            reported = stats.checked;
            checked(reported);
        }
        if !seen.insert(d.clone()) {
            continue;
        }
        let Some(fd) = open_dir(root, &d, root_id)? else {
            // Gone: its parent was read, and says so.
            continue;
        };
        stats.checked += 1;
        let now = match pre {
            Some(t) => t,
            None => times_at(fd.as_fd())?,
        };
        if unchanged(&d, now) {
            // Its entries are the tree's: each subdirectory's name is the
            // same object, so its times come by name through this one.
            for (name, e) in known.entries_of(&d).filter(|(_, e)| e.kind.is_dir()) {
                cname.clear();
                cname.extend_from_slice(name);
                cname.push(0);
                let t = match CStr::from_bytes_with_nul(&cname) {
                    Ok(c) => dir_times_in(fd.as_fd(), c, mnt)?,
                    Err(_) => None,
                };
                visit(&mut queue, &mut stats, e.id, t);
            }
            continue;
        }
        stats.read += 1;
        read.push(d.clone());
        let mut listing = Vec::new();
        let mut dir = Dir::new(fd).map_err(|errno| sys("getdents64", errno))?;
        while let Some(de) = dir.next() {
            let de = match de {
                Ok(de) => de,
                // Removed while read: its parent says so.
                Err(Errno::NOENT | Errno::STALE) => break,
                Err(errno) => return Err(sys("getdents64", errno)),
            };
            let name = de.file_name().to_bytes();
            if name == b"." || name == b".." || (d == *root_id && crate::tracker::is_cookie(name)) {
                continue;
            }
            cname.clear();
            cname.extend_from_slice(name);
            cname.push(0);
            let Ok(c) = CStr::from_bytes_with_nul(&cname) else {
                continue;
            };
            let dfd = dir.fd().map_err(|errno| sys("getdents64", errno))?;
            let Some((e, t)) = entry_at(dfd, c, fsid, mnt)? else {
                continue;
            };
            stats.entries += 1;
            if let Some(since) = content
                && !e.kind.is_dir()
                && t.ctime >= since
            {
                changed.push(Changed {
                    parent: d.clone(),
                    name: Box::from(name),
                    id: e.id.clone(),
                    written: t.mtime >= since,
                });
            }
            if e.kind.is_dir() {
                visit(&mut queue, &mut stats, e.id.clone(), Some(t));
            }
            listing.push((Box::from(name), e));
        }
        listings.push((d, listing));
    }
    checked(stats.checked);
    let (live, scope) = apply(known, &listings);
    Ok(Rescan {
        live,
        stats,
        read,
        scope,
        changed,
    })
}

/// `known` with the directories read as read: what moved in first (a
/// directory moved keeps its subtree), then what went; and the scope of
/// the difference.
fn apply(known: &Tree, listings: &[Listing]) -> (Tree, Set<ObjectId>) {
    let mut scope: Set<ObjectId> = listings.iter().map(|(d, _)| d.clone()).collect();
    let mut live = known.clone();
    let mut refused = Vec::new();
    for (d, listing) in listings {
        for (name, e) in listing {
            if live.lookup(d, name).as_ref() != Some(e) && live.insert(d, name, e.clone()).is_err()
            {
                // Below itself as the tree stands now: a cycle of moves,
                // which the removals below undo.
                refused.push((d, name, e));
            }
        }
    }
    for (d, listing) in listings {
        let names: Set<&[u8]> = listing.iter().map(|(n, _)| &n[..]).collect();
        let gone: Vec<Box<[u8]>> = live
            .entries_of(d)
            .filter(|(n, _)| !names.contains(n))
            .map(|(n, _)| Box::from(n))
            .collect();
        for n in gone {
            if let Some(e) = live.remove(d, &n)
                && e.kind.is_dir()
            {
                // Its subtree went with it: as the tree logged it.
                let mut stack = vec![e.id];
                while let Some(x) = stack.pop() {
                    stack.extend(
                        known
                            .entries_of(&x)
                            .filter(|(_, e)| e.kind.is_dir())
                            .map(|(_, e)| e.id),
                    );
                    scope.insert(x);
                }
            }
        }
    }
    for (d, name, e) in refused {
        let _ = live.insert(d, name, e.clone());
    }
    (live, scope)
}

/// Directory `d` of the tree whose root is open at `root`, opened for
/// reading; `None` when it is gone.
pub(crate) fn open_dir(
    root: BorrowedFd<'_>,
    d: &ObjectId,
    root_id: &ObjectId,
) -> Result<Option<OwnedFd>, weir_sys::Error> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if d == root_id {
        return rustix::fs::openat(root, c".", flags, rustix::fs::Mode::empty())
            .map(Some)
            .map_err(|errno| sys("openat", errno));
    }
    match open_by_handle_at(root, &d.handle(), flags) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if matches!(e.errno(), Some(Errno::STALE | Errno::NOENT)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn sys(call: &'static str, errno: Errno) -> weir_sys::Error {
    weir_sys::Error::Syscall { call, errno }
}
