//! The filesystems under load and the benchmark's own scratch space, all
//! mounted inside the private mount namespace `fs` runs in.
//!
//! - the workspace: a tmpfs on a fresh temporary directory. It holds the
//!   ext4 image, the watchers' stderr files, weir's state directories and
//!   watchman's socket and state: nothing a watcher writes lands on a
//!   filesystem being watched (a fanotify filesystem mark would see it).
//! - `ext4`: a sparse image on the workspace (1 GiB, and 1 KiB more per
//!   inode the start and storm parts ask for, with `-N` that many inodes
//!   more than mkfs's default: a 1 GiB ext4 has only 65,536), attached to a
//!   loop device (buffered I/O) and made with every inode table and the
//!   journal written at once, so no `ext4lazyinit` thread zeroes them in
//!   the background while rounds run.
//! - `tmpfs`: a tmpfs of its own, so it is a superblock apart from the
//!   workspace's.
//!
//! Each filesystem holds `load/tK/{a,b}` for every thread K, made before any
//! watcher starts, so a watcher that crawls (inotifywait -r, watchman) finds
//! every directory the load uses. The other parts take directories of
//! their own beside `load` ([`Target::part_dir`]). Everything is torn down on drop, in
//! order: the ext4 unmounted before its loop device is detached (by its
//! path, only while our image is behind it), the workspace last.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use rustix::mount::{MountFlags, UnmountFlags, mount, unmount};

use crate::loopdev::{self, LoopDev, run_tool};

/// The ext4 image's size without extra inodes (sparse: only what is
/// written takes memory).
const IMAGE_BYTES: u64 = 1 << 30;
/// mkfs.ext4's inode count for [`IMAGE_BYTES`] (one per 16 KiB).
const IMAGE_INODES: u64 = IMAGE_BYTES / 16384;
/// Image bytes per extra inode: its 256-byte slot in the inode table, and
/// room for directory blocks and the journal's share.
const BYTES_PER_EXTRA_INODE: u64 = 1024;

/// A filesystem under load.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, clap::ValueEnum)]
pub(crate) enum FsKind {
    /// ext4 on a loop device whose image lives on a tmpfs.
    Ext4,
    /// tmpfs.
    Tmpfs,
}

impl FsKind {
    pub(crate) const ALL: [FsKind; 2] = [FsKind::Ext4, FsKind::Tmpfs];

    pub(crate) fn name(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Tmpfs => "tmpfs",
        }
    }
}

/// A mount made here, detached on drop.
struct Mounted {
    target: PathBuf,
    lazy: bool,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let flags = if self.lazy {
            UnmountFlags::DETACH
        } else {
            UnmountFlags::empty()
        };
        // If this fails, the mount still goes with the namespace.
        if let Err(e) = unmount(&self.target, flags) {
            eprintln!("  umount {}: {e}", self.target.display());
        }
    }
}

/// One filesystem under load: where it is mounted and its load directory.
pub(crate) struct Target {
    pub(crate) kind: FsKind,
    /// `MNT/load`: the ROOT every watcher is given.
    pub(crate) root: PathBuf,
    /// Where it is mounted.
    mnt: PathBuf,
    // Field order is drop order: the mount before the loop device.
    _mount: Mounted,
    _dev: Option<LoopDev>,
}

impl Target {
    /// Thread `t`'s directory.
    pub(crate) fn thread_dir(&self, t: usize) -> PathBuf {
        self.root.join(format!("t{t}"))
    }

    /// A fresh, empty directory `name` beside `load` (a part's root), as
    /// an absolute path without symlinks: the form weir logs a root by.
    /// An old one is removed first.
    pub(crate) fn part_dir(&self, name: &str) -> Result<PathBuf> {
        let d = self.mnt.join(name);
        if d.exists() {
            std::fs::remove_dir_all(&d).with_context(|| format!("rm -r {}", d.display()))?;
        }
        std::fs::create_dir(&d).with_context(|| format!("mkdir {}", d.display()))?;
        std::fs::canonicalize(&d).with_context(|| format!("realpath {}", d.display()))
    }
}

/// The workspace and the filesystems under load.
pub(crate) struct Workspace {
    /// The filesystems, in the order asked for. Dropped before the
    /// workspace's own tmpfs, which holds the ext4 image.
    pub(crate) targets: Vec<Target>,
    /// Scratch on the workspace tmpfs: stderr files, state directories.
    run: PathBuf,
    _ws: Mounted,
    // Removed last, once the tmpfs on it is gone.
    _tmp: tempfile::TempDir,
}

impl Workspace {
    /// Mounts the workspace and each filesystem of `kinds`, with thread
    /// directories for `threads` threads and room on the ext4 for
    /// `extra_inodes` more inodes than a 1 GiB ext4 has. Refuses unless
    /// this process is in a mount namespace other than `outer_ns`.
    pub(crate) fn new(
        kinds: &[FsKind],
        threads: usize,
        extra_inodes: u64,
        outer_ns: &str,
    ) -> Result<Workspace> {
        loopdev::ensure_private_ns(outer_ns)?;
        let tmp = tempfile::Builder::new()
            .prefix("weir-bench-fs.")
            .tempdir()
            .context("create the workspace directory")?;
        let base = tmp.path().to_path_buf();
        tmpfs(&base, "weir-bench-fs")?;
        let ws_mount = Mounted {
            target: base.clone(),
            lazy: true,
        };
        let run = base.join("run");
        std::fs::create_dir(&run)?;
        let mut targets = Vec::new();
        for &kind in kinds {
            let mnt = base.join(kind.name());
            std::fs::create_dir(&mnt)?;
            let (mount, dev) = match kind {
                FsKind::Tmpfs => {
                    tmpfs(&mnt, "weir-bench-fs-load")?;
                    let m = Mounted {
                        target: mnt.clone(),
                        lazy: false,
                    };
                    (m, None)
                }
                FsKind::Ext4 => {
                    let (m, d) = ext4(&base.join("ext4.img"), &mnt, extra_inodes)?;
                    (m, Some(d))
                }
            };
            let t = Target {
                kind,
                root: mnt.join("load"),
                mnt: mnt.clone(),
                _mount: mount,
                _dev: dev,
            };
            for k in 0..threads {
                for sub in ["a", "b"] {
                    let d = t.thread_dir(k).join(sub);
                    std::fs::create_dir_all(&d)
                        .with_context(|| format!("mkdir {}", d.display()))?;
                }
            }
            targets.push(t);
        }
        Ok(Workspace {
            targets,
            run,
            _ws: ws_mount,
            _tmp: tmp,
        })
    }

    /// A fresh, empty directory `name` on the workspace tmpfs.
    pub(crate) fn fresh_dir(&self, name: &str) -> Result<PathBuf> {
        let d = self.run.join(name);
        if d.exists() {
            std::fs::remove_dir_all(&d)?;
        }
        std::fs::create_dir(&d).with_context(|| format!("mkdir {}", d.display()))?;
        Ok(d)
    }

    /// A path on the workspace tmpfs for a file called `name`.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.run.join(name)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        // The filesystems under load first: the ext4's image is on the
        // workspace.
        self.targets.clear();
    }
}

fn tmpfs(target: &Path, source: &str) -> Result<()> {
    mount(
        source,
        target,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755",
    )
    .with_context(|| format!("mount a tmpfs on {}", target.display()))
}

/// Makes the ext4 image (with `extra_inodes` more inodes than a 1 GiB
/// one), attaches it and mounts it on `mnt`.
fn ext4(image: &Path, mnt: &Path, extra_inodes: u64) -> Result<(Mounted, LoopDev)> {
    let f = std::fs::File::create(image).with_context(|| format!("create {}", image.display()))?;
    f.set_len(IMAGE_BYTES + extra_inodes * BYTES_PER_EXTRA_INODE)?;
    drop(f);
    let mut mkfs = Command::new("mkfs.ext4");
    mkfs.args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]);
    if extra_inodes > 0 {
        mkfs.arg("-N")
            .arg((IMAGE_INODES + extra_inodes).to_string());
    }
    run_tool(mkfs.arg(image))?;
    let dev = LoopDev::attach(image)?;
    mount(
        dev.path(),
        mnt,
        "ext4",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"",
    )
    .with_context(|| format!("mount {} (ext4) on {}", dev.path().display(), mnt.display()))?;
    Ok((
        Mounted {
            target: mnt.to_path_buf(),
            lazy: false,
        },
        dev,
    ))
}
