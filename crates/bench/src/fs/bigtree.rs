//! The start part's tree: F empty files in D directories, made by a few
//! threads before any watcher runs, then read once so the cache is warm.
//!
//! Layout: D/100 group directories `gI` under the root, the other
//! directories `gI/dJ` spread evenly over the groups (99 each at the
//! issue's sizes: 1,000 groups, 99,000 below them), and the files `fK`
//! spread evenly over all D directories (10 each). Two levels, not one
//! flat directory of 100,000, as real trees are, and so no directory's
//! entries take a walk long on their own. Every name is short and the
//! files are empty: the start's cost is the tree's entries, not its bytes.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use rustix::fs::{Mode, OFlags};

/// Threads that make the tree.
const THREADS: usize = 4;

/// A tree's size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) files: u64,
    pub(crate) dirs: u64,
}

impl Shape {
    /// The group directories under the root.
    fn groups(self) -> u64 {
        (self.dirs / 100).max(1).min(self.dirs)
    }

    /// The files of directory number `k` (groups first, then the others).
    fn files_of(self, k: u64) -> u64 {
        let (each, rest) = (self.files / self.dirs, self.files % self.dirs);
        each + u64::from(k < rest)
    }
}

/// What making the tree took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Made {
    pub(crate) make_s: f64,
    /// The warming walk (`weir_fs::walk::read_tree`, in this process): the
    /// same reads a weir start does, for scale.
    pub(crate) walk_s: f64,
    /// Entries the walk found (files and directories).
    pub(crate) entries: u64,
}

/// Makes the tree of `shape` under the empty directory `root`, syncs, and
/// walks it once (which needs root: directories are opened by handle).
pub(crate) fn make_warm(root: &Path, shape: Shape) -> Result<Made> {
    let make_s = make(root, shape)?;
    let t = Instant::now();
    let (_, stats) =
        weir_fs::walk::read_tree(root).with_context(|| format!("walk {}", root.display()))?;
    Ok(Made {
        make_s,
        walk_s: t.elapsed().as_secs_f64(),
        entries: stats.entries,
    })
}

/// Makes the tree of `shape` under the empty directory `root` and syncs
/// (so no writeback of it runs while watchers start); the seconds it took.
fn make(root: &Path, shape: Shape) -> Result<f64> {
    anyhow::ensure!(
        shape.dirs > 0 && shape.files > 0,
        "the start tree needs files and directories"
    );
    let t = Instant::now();
    let groups = shape.groups();
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = (0..THREADS as u64)
            .map(|w| s.spawn(move || make_groups(root, shape, groups, w)))
            .collect();
        for w in workers {
            w.join()
                .map_err(|_| anyhow::anyhow!("a tree maker panicked"))??;
        }
        Ok(())
    })?;
    // This filesystem only: a sync(2) would wait for the host's too.
    rustix::fs::syncfs(open_dir(None, root)?).context("syncfs")?;
    Ok(t.elapsed().as_secs_f64())
}

/// Worker `w`'s share: the groups `g` with `g % THREADS == w`, with their
/// directories and files.
fn make_groups(root: &Path, shape: Shape, groups: u64, w: u64) -> Result<()> {
    let rootfd = open_dir(None, root)?;
    let others = shape.dirs - groups;
    for g in (w..groups).step_by(THREADS) {
        let gname = format!("g{g}");
        let gfd = mkdir_open(&rootfd, &gname)?;
        files(&gfd, shape.files_of(g))?;
        // Directory `groups + j` is `g{j % groups}/d{j}`.
        for j in (g..others).step_by(groups as usize) {
            let dfd = mkdir_open(&gfd, &format!("d{j}"))?;
            files(&dfd, shape.files_of(groups + j))?;
        }
    }
    Ok(())
}

fn open_dir(at: Option<&OwnedFd>, path: &Path) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match at {
        Some(fd) => rustix::fs::openat(fd, path, flags, Mode::empty()),
        None => rustix::fs::open(path, flags, Mode::empty()),
    }
    .with_context(|| format!("open {}", path.display()))
}

fn mkdir_open(at: &OwnedFd, name: &str) -> Result<OwnedFd> {
    rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o755))
        .with_context(|| format!("mkdir {name}"))?;
    open_dir(Some(at), Path::new(name))
}

/// Creates `n` empty files `f0`.. in `dir`.
fn files(dir: &OwnedFd, n: u64) -> Result<()> {
    for k in 0..n {
        let name = CString::new(format!("f{k}"))?;
        drop(
            rustix::fs::openat(
                dir,
                name.as_c_str(),
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o644),
            )
            .with_context(|| format!("create f{k}"))?,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_and_directories_add_up() {
        let s = Shape {
            files: 1_000_000,
            dirs: 100_000,
        };
        assert_eq!(s.groups(), 1000);
        assert_eq!((0..s.dirs).map(|k| s.files_of(k)).sum::<u64>(), s.files);
        let s = Shape {
            files: 20_001,
            dirs: 2_000,
        };
        assert_eq!(s.groups(), 20);
        assert_eq!((0..s.dirs).map(|k| s.files_of(k)).sum::<u64>(), s.files);
    }

    fn count(dir: &Path) -> (u64, u64) {
        let (mut files, mut dirs) = (0, 0);
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                let (f, d) = count(&e.path());
                files += f;
                dirs += d + 1;
            } else {
                files += 1;
            }
        }
        (files, dirs)
    }

    #[test]
    fn a_small_tree_is_made_whole() {
        let d = tempfile::tempdir().unwrap();
        let s = Shape {
            files: 1234,
            dirs: 250,
        };
        make(d.path(), s).unwrap();
        assert_eq!(count(d.path()), (s.files, s.dirs));
    }
}
