//! One process's share of the workload: the paths it believes exist, and
//! each operation, chosen by weight and aimed mostly at those paths.

use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::super::names::{self, COOKIE_PREFIX};
use super::super::rng::Rng;
use super::super::tree::{file_name, join, show};
use super::{EXPECTED, MAX_KNOWN, MAX_PARENT_LEN, OpKind, SHARED, SHARED_PERCENT, WorkloadReport};

/// Which of the worker's lists a path is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Dirs,
    Files,
    Others,
}

/// One process's state: the tree's root, its PRNG, and the paths (relative
/// to the root) it believes exist, by type. `p<N>` and `shared` are on no
/// list: they are never victims.
pub(super) struct Worker {
    root: OwnedFd,
    rng: Rng,
    index: usize,
    own: Vec<u8>,
    dirs: Vec<Vec<u8>>,
    /// Regular files.
    files: Vec<Vec<u8>>,
    /// FIFOs and symlinks.
    others: Vec<Vec<u8>>,
    pub(super) report: WorkloadReport,
}

/// Whether `path` is `base` or under it.
fn under(path: &[u8], base: &[u8]) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// The directory part of a relative path (`""` for a top-level name).
fn parent(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[..i],
        None => b"",
    }
}

impl Worker {
    /// Process `index`'s worker in its own directory `own`, which exists.
    pub(super) fn new(root: OwnedFd, rng: Rng, index: usize, own: Vec<u8>) -> Worker {
        Worker {
            root,
            rng,
            index,
            own,
            dirs: Vec::new(),
            files: Vec::new(),
            others: Vec::new(),
            report: WorkloadReport::default(),
        }
    }

    /// One operation, chosen by weight.
    pub(super) fn step(&mut self) {
        // Weights out of 100; creation outweighs removal so the tree grows.
        const TABLE: [(u32, Option<OpKind>); 16] = [
            (14, Some(OpKind::Create)),
            (8, Some(OpKind::Mkdir)),
            (4, Some(OpKind::Mkfifo)),
            (5, Some(OpKind::Symlink)),
            (6, Some(OpKind::Link)),
            (11, Some(OpKind::Write)),
            (5, Some(OpKind::Chmod)),
            (4, Some(OpKind::Truncate)),
            (7, Some(OpKind::Unlink)),
            (5, Some(OpKind::Rmdir)),
            (6, Some(OpKind::Rename)),
            (5, Some(OpKind::Move)),
            (4, Some(OpKind::MoveDir)),
            (5, Some(OpKind::RenameOver)),
            (5, Some(OpKind::Exchange)),
            // A directory listing, to learn what is there.
            (6, None),
        ];
        let mut roll = self.rng.below(100) as u32;
        let mut choice = None;
        for (w, k) in TABLE {
            if roll < w {
                choice = Some(k);
                break;
            }
            roll -= w;
        }
        let Some(kind) = choice.expect("weights sum to 100") else {
            self.list();
            return;
        };
        let shared = self.rng.chance(SHARED_PERCENT);
        match kind {
            OpKind::Create => self.create(shared),
            OpKind::Mkdir => self.mkdir(shared),
            OpKind::Mkfifo => self.mkfifo(shared),
            OpKind::Symlink => self.symlink(shared),
            OpKind::Link => self.link(shared),
            OpKind::Write => self.write(shared),
            OpKind::Chmod => self.chmod(shared),
            OpKind::Truncate => self.truncate(shared),
            OpKind::Unlink => self.unlink(shared),
            OpKind::Rmdir => self.rmdir(shared),
            OpKind::Rename => self.rename(shared),
            OpKind::Move => self.move_entry(shared, false),
            OpKind::MoveDir => self.move_entry(shared, true),
            OpKind::RenameOver => self.rename_over(shared),
            OpKind::Exchange => self.exchange(shared),
        }
    }

    fn base(&self, shared: bool) -> Vec<u8> {
        if shared {
            SHARED.to_vec()
        } else {
            self.own.clone()
        }
    }

    fn list_of(&mut self, l: List) -> &mut Vec<Vec<u8>> {
        match l {
            List::Dirs => &mut self.dirs,
            List::Files => &mut self.files,
            List::Others => &mut self.others,
        }
    }

    /// A directory in the area (own or shared) to put something in: the
    /// area's base now and then, else a known directory there.
    fn pick_dir(&mut self, shared: bool) -> Vec<u8> {
        let base = self.base(shared);
        let cands: Vec<&Vec<u8>> = self
            .dirs
            .iter()
            .filter(|d| under(d, &base) && d.len() <= MAX_PARENT_LEN)
            .collect();
        if cands.is_empty() || self.rng.chance(25) {
            return base;
        }
        cands[self.rng.below(cands.len())].clone()
    }

    /// A known entry from `lists`, preferably in the area; `None` if the
    /// lists are empty.
    fn pick_entry(&mut self, lists: &[List], shared: bool) -> Option<(Vec<u8>, List)> {
        let base = self.base(shared);
        let all: Vec<(&Vec<u8>, List)> = lists
            .iter()
            .flat_map(|&l| {
                let v = match l {
                    List::Dirs => &self.dirs,
                    List::Files => &self.files,
                    List::Others => &self.others,
                };
                v.iter().map(move |p| (p, l))
            })
            .collect();
        let here: Vec<&(&Vec<u8>, List)> = all.iter().filter(|(p, _)| under(p, &base)).collect();
        let (p, l) = if here.is_empty() {
            *self.rng.pick(&all)?
        } else {
            *here[self.rng.below(here.len())]
        };
        Some((p.clone(), l))
    }

    fn new_name(&mut self, stem: &str) -> Vec<u8> {
        names::generate(&mut self.rng, stem)
    }

    /// Records `path` on list `l` (once).
    fn learn(&mut self, path: Vec<u8>, l: List) {
        let list = self.list_of(l);
        if list.len() < MAX_KNOWN && !list.contains(&path) {
            list.push(path);
        }
    }

    /// Drops `path` and everything under it from every list.
    fn forget(&mut self, path: &[u8]) {
        for l in [&mut self.dirs, &mut self.files, &mut self.others] {
            l.retain(|p| !under(p, path));
        }
    }

    /// After `from` became `to`: drops what `to` replaced, then renames
    /// `from` and everything under it on every list.
    fn renamed(&mut self, from: &[u8], to: &[u8]) {
        if from == to {
            return;
        }
        self.forget(to);
        for l in [&mut self.dirs, &mut self.files, &mut self.others] {
            for p in l.iter_mut() {
                if under(p, from) {
                    *p = [to, &p[from.len()..]].concat();
                }
            }
        }
    }

    /// After `a` and `b` were exchanged: swaps them (and what is under
    /// them) on every list.
    fn exchanged(&mut self, a: &[u8], b: &[u8]) {
        for l in [&mut self.dirs, &mut self.files, &mut self.others] {
            for p in l.iter_mut() {
                if under(p, a) {
                    *p = [b, &p[a.len()..]].concat();
                } else if under(p, b) {
                    *p = [a, &p[b.len()..]].concat();
                }
            }
        }
    }

    /// Counts `r`'s outcome: success for `kind`; an expected errno (or one
    /// in `extra`) as refused, forgetting any of `existing` that is gone;
    /// panics on anything else. True on success.
    fn outcome(
        &mut self,
        kind: OpKind,
        existing: &[&[u8]],
        r: rustix::io::Result<()>,
        extra: &[Errno],
    ) -> bool {
        match r {
            Ok(()) => {
                self.report.bump(kind);
                true
            }
            Err(e) if EXPECTED.contains(&e) || extra.contains(&e) => {
                self.report.refused += 1;
                for p in existing {
                    let gone =
                        rustix::fs::statat(&self.root, *p, AtFlags::SYMLINK_NOFOLLOW).is_err();
                    if gone {
                        self.forget(p);
                    }
                }
                false
            }
            Err(e) => panic!(
                "workload p{}: {kind} {} failed unexpectedly: {e}",
                self.index,
                existing
                    .iter()
                    .map(|p| show(p))
                    .collect::<Vec<_>>()
                    .join(" -> ")
            ),
        }
    }

    fn create(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let name = self.new_name("f");
        let path = join(&dir, &name);
        let len = if self.rng.chance(50) {
            self.rng.below(4096)
        } else {
            0
        };
        let r = rustix::fs::openat(
            &self.root,
            &path,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .and_then(|fd| write_all(&fd, &self.bytes(len)));
        if self.outcome(OpKind::Create, &[&dir], r, &[]) {
            self.learn(path, List::Files);
        }
    }

    fn mkdir(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let path = join(&dir, &self.new_name("d"));
        let r = rustix::fs::mkdirat(&self.root, &path, Mode::from_raw_mode(0o755));
        if self.outcome(OpKind::Mkdir, &[&dir], r, &[]) {
            self.learn(path, List::Dirs);
        }
    }

    fn mkfifo(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let path = join(&dir, &self.new_name("q"));
        let r = rustix::fs::mknodat(
            &self.root,
            &path,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        );
        if self.outcome(OpKind::Mkfifo, &[&dir], r, &[]) {
            self.learn(path, List::Others);
        }
    }

    fn symlink(&mut self, shared: bool) {
        let dir = self.pick_dir(shared);
        let path = join(&dir, &self.new_name("l"));
        // A sibling's name, or a fresh one (dangling). Always a plain name,
        // resolved in the link's own directory: following it can never
        // leave the tree.
        let sibling = self
            .files
            .iter()
            .chain(&self.dirs)
            .chain(&self.others)
            .filter(|p| parent(p) == dir.as_slice())
            .map(|p| file_name(p).to_vec())
            .collect::<Vec<_>>();
        let target = match self.rng.pick(&sibling) {
            Some(t) if self.rng.chance(60) => t.clone(),
            _ => self.new_name("t"),
        };
        let r = rustix::fs::symlinkat(target.as_slice(), &self.root, &path);
        if self.outcome(OpKind::Symlink, &[&dir], r, &[]) {
            self.learn(path, List::Others);
        }
    }

    fn link(&mut self, shared: bool) {
        let Some((src, l)) = self.pick_entry(&[List::Files, List::Files, List::Others], shared)
        else {
            return self.create(shared);
        };
        let area = if self.rng.chance(70) { shared } else { !shared };
        let dir = self.pick_dir(area);
        let path = join(&dir, &self.new_name("h"));
        let r = rustix::fs::linkat(&self.root, &src, &self.root, &path, AtFlags::empty());
        // EPERM: a directory took the source's name (links to directories
        // are refused); EMLINK: a filesystem's link limit.
        if self.outcome(OpKind::Link, &[&src, &dir], r, &[Errno::PERM, Errno::MLINK]) {
            self.learn(path, l);
        }
    }

    fn write(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files], shared) else {
            return self.create(shared);
        };
        let len = if self.rng.chance(10) {
            (16 << 10) + self.rng.below(48 << 10)
        } else {
            1 + self.rng.below(2048)
        };
        let r = open_regular(&self.root, &path, OFlags::APPEND)
            .and_then(|fd| write_all(&fd, &self.bytes(len)));
        // ENXIO: a FIFO (without a reader) took the name.
        self.outcome(OpKind::Write, &[&path], r, &[Errno::NXIO]);
    }

    fn chmod(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files, List::Dirs, List::Others], shared)
        else {
            return self.mkdir(shared);
        };
        // The owner keeps rwx: a workload run as a plain user must still
        // get into every directory.
        let mode = 0o700 | (self.rng.next_u64() as u32 & 0o077);
        // Follows a symlink, to a sibling at most (see symlink()).
        let r = rustix::fs::chmodat(
            &self.root,
            &path,
            Mode::from_raw_mode(mode),
            AtFlags::empty(),
        );
        self.outcome(OpKind::Chmod, &[&path], r, &[]);
    }

    fn truncate(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files], shared) else {
            return self.create(shared);
        };
        let len = if self.rng.chance(40) {
            0
        } else {
            self.rng.below(8192) as u64
        };
        let r = open_regular(&self.root, &path, OFlags::empty())
            .and_then(|fd| rustix::fs::ftruncate(&fd, len));
        self.outcome(OpKind::Truncate, &[&path], r, &[Errno::NXIO]);
    }

    fn unlink(&mut self, shared: bool) {
        let Some((path, _)) = self.pick_entry(&[List::Files, List::Others], shared) else {
            return self.create(shared);
        };
        let r = rustix::fs::unlinkat(&self.root, &path, AtFlags::empty());
        if self.outcome(OpKind::Unlink, &[&path], r, &[]) {
            self.forget(&path);
        }
    }

    fn rmdir(&mut self, shared: bool) {
        // Mostly a leaf (it may succeed), sometimes any (ENOTEMPTY).
        let leaves: Vec<Vec<u8>> = self
            .dirs
            .iter()
            .filter(|d| {
                !self
                    .dirs
                    .iter()
                    .chain(&self.files)
                    .chain(&self.others)
                    .any(|p| parent(p) == d.as_slice())
            })
            .cloned()
            .collect();
        let path = match self.rng.pick(&leaves) {
            Some(p) if self.rng.chance(70) => p.clone(),
            _ => match self.pick_entry(&[List::Dirs], shared) {
                Some((p, _)) => p,
                None => return self.mkdir(shared),
            },
        };
        let r = rustix::fs::unlinkat(&self.root, &path, AtFlags::REMOVEDIR);
        if self.outcome(OpKind::Rmdir, &[&path], r, &[]) {
            self.forget(&path);
        }
    }

    fn rename(&mut self, shared: bool) {
        let Some((from, _)) = self.pick_entry(&[List::Files, List::Dirs, List::Others], shared)
        else {
            return self.create(shared);
        };
        let to = join(parent(&from), &self.new_name("r"));
        let r = rustix::fs::renameat(&self.root, &from, &self.root, &to);
        if self.outcome(OpKind::Rename, &[&from], r, &[]) {
            self.renamed(&from, &to);
        }
    }

    /// Moves a non-directory, or a directory (`dir`), to another directory
    /// of either area, keeping its name more often than not.
    fn move_entry(&mut self, shared: bool, dir: bool) {
        let lists: &[List] = if dir {
            &[List::Dirs]
        } else {
            &[List::Files, List::Others]
        };
        let Some((from, _)) = self.pick_entry(lists, shared) else {
            return if dir {
                self.mkdir(shared)
            } else {
                self.create(shared)
            };
        };
        let area = if self.rng.chance(60) { !shared } else { shared };
        let mut target = self.pick_dir(area);
        // Into itself fails (EINVAL); so does a move in place, quietly.
        if target == parent(&from) || under(&target, &from) {
            target = self.base(!under(&from, SHARED));
        }
        let name = if self.rng.chance(60) {
            file_name(&from).to_vec()
        } else {
            self.new_name(if dir { "m" } else { "v" })
        };
        let to = join(&target, &name);
        let r = rustix::fs::renameat(&self.root, &from, &self.root, &to);
        let kind = if dir { OpKind::MoveDir } else { OpKind::Move };
        if self.outcome(kind, &[&from, &target], r, &[]) {
            self.renamed(&from, &to);
        }
    }

    /// Renames a known entry onto another known one: mostly a
    /// non-directory onto a non-directory, sometimes a directory onto a
    /// directory (which fails unless the target is empty).
    fn rename_over(&mut self, shared: bool) {
        let lists: &[List] = if self.rng.chance(80) {
            &[List::Files, List::Others]
        } else {
            &[List::Dirs]
        };
        let (Some((from, _)), Some((to, _))) = (
            self.pick_entry(lists, shared),
            self.pick_entry(lists, shared),
        ) else {
            return self.create(shared);
        };
        if from == to {
            return self.rename(shared);
        }
        // Counted as an overwrite only if the target was there (a race may
        // still take it away in between; the count is a lower bound on
        // intent, not a proof).
        let there = rustix::fs::statat(&self.root, &to, AtFlags::SYMLINK_NOFOLLOW).is_ok();
        let r = rustix::fs::renameat(&self.root, &from, &self.root, &to);
        let kind = if there {
            OpKind::RenameOver
        } else {
            OpKind::Rename
        };
        if self.outcome(kind, &[&from, &to], r, &[]) {
            self.renamed(&from, &to);
        }
    }

    fn exchange(&mut self, shared: bool) {
        let all = [List::Files, List::Dirs, List::Others];
        let other = if self.rng.chance(70) { shared } else { !shared };
        let (Some((a, _)), Some((b, _))) =
            (self.pick_entry(&all, shared), self.pick_entry(&all, other))
        else {
            return self.create(shared);
        };
        if under(&a, &b) || under(&b, &a) {
            // The kernel refuses to swap an entry with its own ancestor.
            return self.rename(shared);
        }
        let r = rustix::fs::renameat_with(&self.root, &a, &self.root, &b, RenameFlags::EXCHANGE);
        if self.outcome(OpKind::Exchange, &[&a, &b], r, &[]) {
            self.exchanged(&a, &b);
        }
    }

    /// Lists a directory of the area and learns its entries (sorted, so
    /// the choices that follow do not depend on a filesystem's readdir
    /// order). Never learns the tracker's cookie files.
    fn list(&mut self) {
        self.report.listings += 1;
        let shared = self.rng.chance(SHARED_PERCENT * 2);
        let dir = self.pick_dir(shared);
        let fd = match rustix::fs::openat(
            &self.root,
            &dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) if EXPECTED.contains(&e) => {
                self.forget(&dir);
                return;
            }
            Err(e) => panic!("workload p{}: list {}: {e}", self.index, show(&dir)),
        };
        let mut seen = Vec::new();
        for entry in Dir::read_from(&fd).expect("read a directory") {
            let entry = match entry {
                Ok(e) => e,
                // The directory was removed while we read it.
                Err(Errno::NOENT) => break,
                Err(e) => panic!("workload p{}: list {}: {e}", self.index, show(&dir)),
            };
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." || name.starts_with(COOKIE_PREFIX) {
                continue;
            }
            seen.push((name.to_vec(), entry.file_type()));
        }
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, ty) in seen {
            let path = join(&dir, &name);
            let ty = match ty {
                FileType::Unknown => {
                    match rustix::fs::statat(&self.root, &path, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => FileType::from_raw_mode(st.st_mode),
                        Err(_) => continue,
                    }
                }
                t => t,
            };
            let l = match ty {
                FileType::Directory => List::Dirs,
                FileType::RegularFile => List::Files,
                _ => List::Others,
            };
            // A name whose type changed (an exchange) is re-filed.
            for other in [List::Dirs, List::Files, List::Others] {
                if other != l {
                    self.list_of(other).retain(|p| p != &path);
                }
            }
            self.learn(path, l);
        }
    }

    /// `len` pseudo-random bytes to write.
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.rng.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

/// Opens `path` for writing without following a symlink and without
/// blocking (a FIFO with no reader gives ENXIO instead of hanging).
fn open_regular(root: &OwnedFd, path: &[u8], extra: OFlags) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        root,
        path,
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | extra,
        Mode::empty(),
    )
}

fn write_all(fd: &OwnedFd, mut buf: &[u8]) -> rustix::io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
