//! The rescan's look at the live tree, in parallel across directories.
//!
//! Directories wait in one queue; each of a few threads takes one, looks
//! at its times, and either goes down by name through it (unchanged) or
//! reads it (changed), putting the subdirectories it found back in the
//! queue. What each thread found is merged at the end. The threads are the
//! rescan's budget: at most [`threads`] CPUs, and as many `statx` or
//! `getdents64` calls in flight at once.
//!
//! A directory whose times did not move holds what the tree says: it is
//! neither listed nor in the scope of the comparison, even when read
//! (content-exact, for its files' times).
//!
//! The threads share the tree as last logged (read only), the set of
//! directories already taken (a directory moved while the rescan runs may
//! be found twice) and the first error, which stops them all.

use std::ffi::CStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use rustix::fs::Dir;
use rustix::io::Errno;

use super::{Changed, Listing, RescanStats, open_dir, sys};
use crate::id::ObjectId;
use crate::tree::{DirTimes, Set, Tree};
use crate::walk::{dir_times_in, entry_at, kind_at, times_at};

/// How many directories are looked at between two reports of progress.
const REPORT_EVERY: u64 = 256;

/// The most threads a rescan uses.
const MAX_THREADS: usize = 4;

/// The threads a rescan uses: the CPUs, at most [`MAX_THREADS`].
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS))
}

/// What a rescan is asked.
pub(super) struct Ask<'a> {
    pub(super) root: BorrowedFd<'a>,
    pub(super) known: &'a Tree,
    pub(super) root_id: &'a ObjectId,
    pub(super) fsid: [u32; 2],
    pub(super) mnt: u64,
    pub(super) times: &'a (dyn Fn(&ObjectId) -> Option<DirTimes> + Sync),
    pub(super) content: Option<(i64, u32)>,
    pub(super) checked: &'a (dyn Fn(u64) + Sync),
}

/// What the threads found, merged.
#[derive(Default)]
pub(super) struct Found {
    pub(super) stats: RescanStats,
    /// Each directory read whose times moved, with its depth as found.
    pub(super) listings: Vec<(u32, Listing)>,
    pub(super) read: Vec<ObjectId>,
    pub(super) changed: Vec<Changed>,
}

/// A directory to look at, with its times when its parent gave them, and
/// its depth below the root as found.
type Job = (ObjectId, Option<DirTimes>, u32);

/// The queue and what the threads share through its lock.
struct Work {
    queue: Vec<Job>,
    /// Directories taken from the queue (a second find is skipped).
    seen: Set<ObjectId>,
    /// Threads at work on a directory.
    busy: usize,
    /// The first error; every thread stops at it.
    failed: Option<weir_sys::Error>,
}

struct Shared<'a> {
    ask: &'a Ask<'a>,
    work: Mutex<Work>,
    more: Condvar,
    checked: AtomicU64,
}

/// Looks at the tree below the root, with `n` threads.
pub(super) fn scan(ask: &Ask<'_>, n: usize) -> Result<Found, weir_sys::Error> {
    let shared = Shared {
        ask,
        work: Mutex::new(Work {
            queue: vec![(ask.root_id.clone(), None, 0)],
            seen: Set::default(),
            busy: 0,
            failed: None,
        }),
        more: Condvar::new(),
        checked: AtomicU64::new(0),
    };
    // This thread is one of the `n`; a thread that cannot be made leaves
    // the work to fewer.
    let found: Vec<Found> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..n)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("weir-fs-rescan".into())
                    .spawn_scoped(s, || worker(&shared))
                    .ok()
            })
            .collect();
        let mut found = vec![worker(&shared)];
        found.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
        );
        found
    });
    let work = shared
        .work
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = work.failed {
        return Err(e);
    }
    let mut all = Found::default();
    for f in found {
        all.stats.checked += f.stats.checked;
        all.stats.read += f.stats.read;
        all.stats.entries += f.stats.entries;
        all.listings.extend(f.listings);
        all.read.extend(f.read);
        all.changed.extend(f.changed);
    }
    // A directory that is new is found through its parent, one level up,
    // and its entries can go in the tree only once the parent's have: the
    // listings go parent first, as one thread in breadth-first order would
    // give them.
    all.listings.sort_by_key(|(depth, _)| *depth);
    (ask.checked)(all.stats.checked);
    Ok(all)
}

/// One thread: directories from the queue until it is empty and no thread
/// is at work (nothing more can come), or one failed.
fn worker(sh: &Shared<'_>) -> Found {
    let mut found = Found::default();
    let mut next: Vec<Job> = Vec::new();
    let mut cname = Vec::with_capacity(256);
    loop {
        let job = {
            let mut w = sh.work.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if w.failed.is_some() {
                    return found;
                }
                if let Some((d, t, depth)) = w.queue.pop() {
                    if w.seen.insert(d.clone()) {
                        w.busy += 1;
                        break (d, t, depth);
                    }
                    continue;
                }
                if w.busy == 0 {
                    sh.more.notify_all();
                    return found;
                }
                w = sh.more.wait(w).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let guard = Busy(sh);
        let r = look(sh, job, &mut found, &mut next, &mut cname);
        std::mem::forget(guard);
        let mut w = sh.work.lock().unwrap_or_else(PoisonError::into_inner);
        w.busy -= 1;
        match r {
            Ok(()) => {
                let woken = next.len();
                w.queue.append(&mut next);
                if woken > 1 {
                    sh.more.notify_all();
                } else if woken == 1 || (w.busy == 0 && w.queue.is_empty()) {
                    sh.more.notify_one();
                }
            }
            Err(e) => {
                w.failed.get_or_insert(e);
                sh.more.notify_all();
                return found;
            }
        }
    }
}

/// A thread at work on a directory. Dropped only if the work panics: then
/// every thread is told to stop (the panic is the rescan's failure, and
/// none may wait for this one forever).
struct Busy<'s, 'a>(&'s Shared<'a>);

impl Drop for Busy<'_, '_> {
    fn drop(&mut self) {
        let mut w = self.0.work.lock().unwrap_or_else(PoisonError::into_inner);
        w.busy -= 1;
        w.failed.get_or_insert(weir_sys::Error::Syscall {
            call: "rescan",
            errno: Errno::CANCELED,
        });
        self.0.more.notify_all();
    }
}

/// Counts a directory looked at, reporting progress now and then.
fn count(sh: &Shared<'_>, found: &mut Found) {
    found.stats.checked += 1;
    let n = sh.checked.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_multiple_of(REPORT_EVERY) {
        (sh.ask.checked)(n);
    }
}

/// Looks at directory `d`: its subdirectories go to `next`, and if its
/// times moved its entries to `found`.
fn look(
    sh: &Shared<'_>,
    (d, pre, depth): Job,
    found: &mut Found,
    next: &mut Vec<Job>,
    cname: &mut Vec<u8>,
) -> Result<(), weir_sys::Error> {
    let ask = sh.ask;
    let unchanged = |d: &ObjectId, t: DirTimes| ask.content.is_none() && (ask.times)(d) == Some(t);
    // A directory found unchanged through its parent, with no directory
    // below it, needs nothing more: most directories are such leaves, and
    // this spares each an open by handle.
    let mut visit = |found: &mut Found, c: ObjectId, t: Option<DirTimes>| {
        if let Some(t) = t
            && unchanged(&c, t)
            && !ask.known.entries_of(&c).any(|(_, e)| e.kind.is_dir())
        {
            count(sh, found);
            return;
        }
        next.push((c, t, depth + 1));
    };
    let Some(fd) = open_dir(ask.root, &d, ask.root_id)? else {
        // Gone: its parent was read, and says so.
        return Ok(());
    };
    count(sh, found);
    let now = match pre {
        Some(t) => t,
        None => times_at(fd.as_fd())?,
    };
    // Unchanged: its entries are the tree's. Content-exact, it is read
    // all the same, for its files' times, but what it holds is known.
    let same = (ask.times)(&d) == Some(now);
    if same && ask.content.is_none() {
        // Each subdirectory's name is the same object, so its times come
        // by name through this one.
        for (name, e) in ask.known.entries_of(&d).filter(|(_, e)| e.kind.is_dir()) {
            let t = match c_name(cname, name) {
                Some(c) => dir_times_in(fd.as_fd(), c, ask.mnt)?,
                None => None,
            };
            visit(found, e.id, t);
        }
        return Ok(());
    }
    found.stats.read += 1;
    if !same {
        found.read.push(d.clone());
    }
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
        if name == b"." || name == b".." || (d == *ask.root_id && crate::tracker::is_cookie(name)) {
            continue;
        }
        let Some(c) = c_name(cname, name) else {
            continue;
        };
        let dfd = dir.fd().map_err(|errno| sys("getdents64", errno))?;
        // In a directory whose times did not move, each name is the
        // tree's object: its id is known, and only its times are looked
        // at (a kind that differs says otherwise, and the id is asked).
        let known = same.then(|| ask.known.lookup(&d, name)).flatten();
        let got = match known {
            Some(e) => kind_at(dfd, c, ask.mnt)?
                .filter(|(k, _)| *k == e.kind)
                .map(|(_, t)| (e, t)),
            None => None,
        };
        let got = match got {
            Some(g) => Some(g),
            None => entry_at(dfd, c, ask.fsid, ask.mnt)?,
        };
        let Some((e, t)) = got else {
            continue;
        };
        found.stats.entries += 1;
        if let Some(since) = ask.content
            && !e.kind.is_dir()
            && t.ctime >= since
        {
            found.changed.push(Changed {
                parent: d.clone(),
                name: Box::from(name),
                id: e.id.clone(),
                written: t.mtime >= since,
            });
        }
        if e.kind.is_dir() {
            visit(found, e.id.clone(), Some(t));
        }
        if !same {
            listing.push((Box::from(name), e));
        }
    }
    if !same {
        found.listings.push((depth, (d, listing)));
    }
    Ok(())
}

/// `name` as a C string in `buf`; `None` for a name with a NUL (no
/// directory entry has one).
fn c_name<'b>(buf: &'b mut Vec<u8>, name: &[u8]) -> Option<&'b CStr> {
    buf.clear();
    buf.extend_from_slice(name);
    buf.push(0);
    CStr::from_bytes_with_nul(buf).ok()
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;
    use crate::walk::read_tree;

    /// Every entry of `t` by its path, with its id.
    fn names(t: &Tree) -> std::collections::BTreeSet<(Vec<u8>, ObjectId)> {
        let mut out = std::collections::BTreeSet::new();
        let mut stack = vec![(t.root().clone(), Vec::new())];
        while let Some((d, p)) = stack.pop() {
            for (n, e) in t.entries_of(&d) {
                let mut q = p.clone();
                q.push(b'/');
                q.extend_from_slice(n);
                if e.kind.is_dir() {
                    stack.push((e.id.clone(), q.clone()));
                }
                out.insert((q, e.id));
            }
        }
        out
    }

    /// A temporary tree of `a` directories of `b` directories of `f`
    /// files each.
    fn grid(a: usize, b: usize, f: usize) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().expect("tempdir");
        for a in 0..a {
            for b in 0..b {
                let d = tmp.path().join(format!("a{a}/b{b}"));
                std::fs::create_dir_all(&d).expect("mkdir");
                for f in 0..f {
                    std::fs::write(d.join(format!("f{f}")), b"").expect("create");
                }
            }
        }
        tmp
    }

    /// The root open, its fsid and its mount's unique id.
    fn open_root(root: &std::path::Path) -> (std::os::fd::OwnedFd, [u32; 2], u64) {
        let fd = rustix::fs::open(
            root,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .expect("open");
        let fsid = weir_sys::statfs::fsid(fd.as_fd()).expect("fsid");
        let mnt = rustix::fs::statx(
            &fd,
            c"",
            rustix::fs::AtFlags::EMPTY_PATH,
            rustix::fs::StatxFlags::from_bits_retain(weir_sys::statx::STATX_MNT_ID_UNIQUE),
        )
        .expect("statx")
        .stx_mnt_id;
        (fd, fsid, mnt)
    }

    fn sorted(mut f: Found) -> Found {
        f.listings.sort_by(|a, b| (a.1).0.cmp(&(b.1).0));
        for (_, (_, l)) in &mut f.listings {
            l.sort_by(|a, b| a.0.cmp(&b.0));
        }
        f.read.sort();
        f.changed
            .sort_by(|a, b| (&a.parent, &a.name).cmp(&(&b.parent, &b.name)));
        f
    }

    /// Four threads find what one does: the same directories looked at and
    /// read, the same entries, the same files changed. On a tree with a
    /// changed directory at every level, and content-exact as well.
    #[test]
    fn threads_find_what_one_finds() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: opening directories by handle needs CAP_DAC_READ_SEARCH (root)");
            return;
        }
        let tmp = grid(6, 8, 5);
        let root = tmp.path();
        let (known, _) = read_tree(root).expect("walk");
        std::fs::write(root.join("a1/b3/new"), b"").expect("create");
        std::fs::remove_file(root.join("a4/b0/f2")).expect("unlink");
        std::fs::create_dir(root.join("a2/b5/deeper")).expect("mkdir");
        std::fs::write(root.join("a2/b5/deeper/x"), b"").expect("create");
        std::fs::rename(root.join("a5/b7"), root.join("a0/moved")).expect("rename");
        // New directories in new directories: each one's entries go in
        // the live tree only after its parent's.
        for n in 0..8 {
            let d = root.join(format!("a3/new{n}/in/deeper"));
            std::fs::create_dir_all(&d).expect("mkdir -p");
            std::fs::write(d.join("f"), b"").expect("create");
            std::fs::write(root.join(format!("a3/new{n}/in/g")), b"").expect("create");
        }
        let (now, _) = read_tree(root).expect("walk the live tree");
        let (fd, fsid, mnt) = open_root(root);
        let root_id = known.root().clone();
        for content in [None, Some((0, 0))] {
            let times = |d: &ObjectId| known.dir_times(d);
            let ask = Ask {
                root: fd.as_fd(),
                known: &known,
                root_id: &root_id,
                fsid,
                mnt,
                times: &times,
                content,
                checked: &|_| {},
            };
            let one = scan(&ask, 1).expect("one thread");
            let four = scan(&ask, 4).expect("four threads");
            for f in [&one, &four] {
                let mut listings: Vec<Listing> =
                    f.listings.iter().map(|(_, l)| l.clone()).collect();
                let (live, _) = super::super::apply(&known, &listings);
                assert_eq!(names(&live), names(&now), "{content:?}: the live tree");
                // In any order (threads merge theirs as they end): children
                // before their parents here.
                listings.reverse();
                let (live, _) = super::super::apply(&known, &listings);
                assert_eq!(names(&live), names(&now), "{content:?}: listings reversed");
            }
            let (one, four) = (sorted(one), sorted(four));
            assert_eq!(one.stats, four.stats, "{content:?}");
            assert_eq!(one.read, four.read, "{content:?}");
            assert_eq!(one.listings, four.listings, "{content:?}");
            assert_eq!(one.changed, four.changed, "{content:?}");
            // The root, a1, a1/b3, a4/b0, a2/b5, a2/b5/deeper, a5, a0 and
            // a0/moved (new: no times) at least; every directory content-exact.
            let least = if content.is_some() { 6 * 8 + 6 + 2 } else { 9 };
            assert!(one.stats.read >= least, "{:?}: {:?}", content, one.stats);
        }
    }

    /// A look from the tree's directories alone (what a restart has before
    /// the copy's files load) finds what a look from the whole tree finds,
    /// and applied to the whole tree gives the live tree.
    #[test]
    fn a_look_from_the_directories_alone_finds_what_the_whole_tree_gives() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: opening directories by handle needs CAP_DAC_READ_SEARCH (root)");
            return;
        }
        let tmp = grid(4, 4, 3);
        let root = tmp.path();
        let (known, _) = read_tree(root).expect("walk");
        let mut dirs = known.clone();
        let files: Vec<(ObjectId, Box<[u8]>)> = known
            .links_top_down()
            .into_iter()
            .filter(|(_, _, e, _)| !e.kind.is_dir())
            .map(|(d, n, _, _)| (d, n))
            .collect();
        assert_eq!(files.len(), 4 * 4 * 3);
        for (d, n) in &files {
            dirs.remove(d, n).expect("a file of the tree");
        }
        assert_eq!(dirs.len(), 4 + 4 * 4);
        std::fs::write(root.join("a1/b3/new"), b"").expect("create");
        std::fs::remove_file(root.join("a2/b0/f2")).expect("unlink");
        std::fs::rename(root.join("a3/b1/f0"), root.join("a0/b0/f9")).expect("rename");
        std::fs::rename(root.join("a3/b2"), root.join("a0/moved")).expect("rename");
        std::fs::create_dir(root.join("a1/b1/deeper")).expect("mkdir");
        std::fs::write(root.join("a1/b1/deeper/x"), b"").expect("create");
        let (now, _) = read_tree(root).expect("walk the live tree");
        let (fd, fsid, _) = open_root(root);
        let root_id = known.root().clone();
        let look = |t: &Tree| {
            let times = |d: &ObjectId| t.dir_times(d);
            super::super::look_counted(fd.as_fd(), t, &root_id, fsid, &times, None, &|_| {})
                .expect("look")
        };
        let (from_dirs, from_all) = (look(&dirs), look(&known));
        assert_eq!(from_dirs.stats(), from_all.stats());
        assert!(from_dirs.stats().read >= 7, "{:?}", from_dirs.stats());
        let (a, b) = (from_dirs.apply_to(&known), from_all.apply_to(&known));
        assert_eq!(names(&a.live), names(&now));
        assert_eq!(names(&b.live), names(&now));
        assert_eq!(a.scope, b.scope);
    }
}
