//! Scratch filesystems for the privileged tests: a fresh ext4, xfs or btrfs
//! on a loop device over a sparse image, or a tmpfs, mounted inside the
//! private mount namespace and torn down on drop (unmounted, then the loop
//! device detached by its path, then the image removed).
//!
//! btrfs is mounted twice: the top level at one mount point and subvolume
//! `sv` at a second, and the watched root is on the subvolume mount. The
//! kernel refuses fanotify filesystem marks there (the subvolume's fsid is
//! not the superblock's), which is the case weir-fs works around, so it is
//! the one worth testing.

use std::ffi::CString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};
use weir_lvmfleet::{LoopDev, find_tool, loop_unavailable, run_tool};

/// Image size for ext4 and btrfs (btrfs needs at least 128 MiB without
/// mixed block groups); sparse, so only what mkfs and the test write
/// takes room on the base tmpfs.
const IMAGE_SIZE: u64 = 512 << 20;
/// xfs refuses filesystems under 300 MiB.
const XFS_IMAGE_SIZE: u64 = 512 << 20;
/// The tmpfs scratch's size limit.
const TMPFS_OPTIONS: &str = "size=512m,mode=0755";
/// The btrfs subvolume the watched root lives on.
const SUBVOL: &str = "sv";
/// The watched directory's name inside the filesystem.
const ROOT_NAME: &str = "w";

/// Distinguishes the scratches of one process under one base.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A filesystem type the tests run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FsKind {
    /// ext4 on a loop device.
    Ext4,
    /// xfs on a loop device.
    Xfs,
    /// btrfs on a loop device, watched through a subvolume mount.
    Btrfs,
    /// tmpfs (no device).
    Tmpfs,
}

impl FsKind {
    /// Every kind, in a fixed order.
    pub(crate) const ALL: [FsKind; 4] = [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs, FsKind::Tmpfs];

    /// The kernel's name for the filesystem type (`/proc/filesystems`).
    pub(crate) fn fstype(self) -> &'static str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
            FsKind::Tmpfs => "tmpfs",
        }
    }

    /// Whether it lives on a (loop) block device.
    pub(crate) fn on_block_device(self) -> bool {
        self != FsKind::Tmpfs
    }

    /// The mkfs tool and its arguments before the device, for block
    /// filesystems: quiet, and forced (the image is ours and fresh).
    fn mkfs(self) -> Option<(&'static str, &'static [&'static str])> {
        match self {
            FsKind::Ext4 => Some(("mkfs.ext4", &["-q", "-F"])),
            FsKind::Xfs => Some(("mkfs.xfs", &["-q", "-f"])),
            FsKind::Btrfs => Some(("mkfs.btrfs", &["-q", "-f"])),
            FsKind::Tmpfs => None,
        }
    }

    fn image_size(self) -> u64 {
        match self {
            FsKind::Xfs => XFS_IMAGE_SIZE,
            _ => IMAGE_SIZE,
        }
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.fstype())
    }
}

/// A freshly made filesystem, mounted in the private namespace, with an
/// empty directory to watch; torn down on drop.
#[derive(Debug)]
pub(crate) struct Scratch {
    kind: FsKind,
    /// This scratch's own directory under the base: image and mount points.
    dir: PathBuf,
    /// The mount the watched root is on (the subvolume's, for btrfs).
    mount_point: PathBuf,
    /// btrfs: the top-level mount.
    top: Option<PathBuf>,
    /// The watched directory, `mount_point/w`.
    root: PathBuf,
    /// What is mounted, in mount order (unmounted in reverse).
    mounted: Vec<PathBuf>,
    /// The loop device, detached (by path) once everything is unmounted.
    dev: Option<LoopDev>,
    image: Option<PathBuf>,
}

impl Scratch {
    /// The filesystem type.
    pub(crate) fn kind(&self) -> FsKind {
        self.kind
    }

    /// The directory to watch: `w`, empty when made, on [`Scratch::mount_point`].
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The mount the watched root is on; for btrfs, the subvolume's mount.
    pub(crate) fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    /// The loop device of a block filesystem; `None` for tmpfs.
    pub(crate) fn device(&self) -> Option<&Path> {
        self.dev.as_ref().map(LoopDev::path)
    }

    /// btrfs: the top-level mount (where `sv/w` is the watched root too);
    /// `None` for the other kinds.
    pub(crate) fn top_mount(&self) -> Option<&Path> {
        self.top.as_deref()
    }

    /// Mounts `source` on `target` (made here), and records it for drop.
    fn mount(&mut self, source: &str, target: &Path, options: Option<&str>) -> Result<(), Errno> {
        std::fs::create_dir(target).unwrap_or_else(|e| panic!("mkdir {}: {e}", target.display()));
        let data = options.map(|o| CString::new(o).expect("no NUL in mount options"));
        rustix::mount::mount(
            source,
            target,
            self.kind.fstype(),
            MountFlags::empty(),
            data.as_deref(),
        )?;
        self.mounted.push(target.to_path_buf());
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for m in self.mounted.drain(..).rev() {
            // A plain unmount, so that the device is free to detach; if a
            // test still holds something open on it, detach the mount
            // lazily and let the loop device's autoclear finish the job.
            if let Err(e) = rustix::mount::unmount(&m, UnmountFlags::empty()) {
                eprintln!("  umount {}: {e}; detaching it lazily", m.display());
                let _ = rustix::mount::unmount(&m, UnmountFlags::DETACH);
            }
        }
        // LoopDev's drop detaches by path, only if our image is still behind it.
        drop(self.dev.take());
        if let Some(image) = self.image.take() {
            let _ = std::fs::remove_file(image);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Makes, mounts and returns a scratch filesystem of `kind`, keeping its
/// image and mount points under `base` (the private namespace's tmpfs, see
/// `support::private_base`). `None`, with the reason printed, when a tool
/// or privilege it needs is missing here.
///
/// Panics (after undoing what it did) if the tools are there but fail, and
/// refuses to run outside the private namespace.
pub(crate) fn scratch(kind: FsKind, base: &Path) -> Option<Scratch> {
    super::assert_private_ns();
    if let Some(why) = missing(kind) {
        eprintln!("skipped ({kind}): {why}");
        return None;
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = base.join(format!("scratch-{kind}-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    let mnt = dir.join("mnt");
    let mut s = Scratch {
        kind,
        dir: dir.clone(),
        mount_point: mnt.clone(),
        top: None,
        root: mnt.join(ROOT_NAME),
        mounted: Vec::new(),
        dev: None,
        image: None,
    };

    if kind == FsKind::Tmpfs {
        if let Err(e) = s.mount("weir-scratch", &mnt, Some(TMPFS_OPTIONS)) {
            panic!("mount tmpfs on {}: {e}", mnt.display());
        }
    } else {
        let image = dir.join("image");
        let f = std::fs::File::create(&image)
            .unwrap_or_else(|e| panic!("create {}: {e}", image.display()));
        f.set_len(kind.image_size())
            .unwrap_or_else(|e| panic!("size {}: {e}", image.display()));
        drop(f);
        s.image = Some(image.clone());
        match LoopDev::attach(&image) {
            Ok(dev) => s.dev = Some(dev),
            Err(e) => {
                eprintln!("skipped ({kind}): cannot attach a loop device: {e}");
                return None;
            }
        }
        let dev = s
            .device()
            .expect("attached")
            .to_str()
            .expect("UTF-8 device path")
            .to_owned();
        let (tool, args) = kind.mkfs().expect("a block filesystem");
        let tool = find_tool(tool).expect("checked by missing()");
        if let Err(e) = run_tool(Command::new(&tool).args(args).arg(&dev)) {
            panic!("{}: {e}", tool.display());
        }
        if kind == FsKind::Btrfs {
            let top = dir.join("top");
            mount_or_skip(&mut s, &dev, &top, None)?;
            s.top = Some(top.clone());
            let btrfs = find_tool("btrfs").expect("checked by missing()");
            let sv = top.join(SUBVOL);
            if let Err(e) = run_tool(Command::new(btrfs).args(["subvolume", "create"]).arg(&sv)) {
                panic!("btrfs subvolume create {}: {e}", sv.display());
            }
            let opts = format!("subvol={SUBVOL}");
            mount_or_skip(&mut s, &dev, &mnt, Some(&opts))?;
        } else {
            mount_or_skip(&mut s, &dev, &mnt, None)?;
        }
    }
    let root = s.root.clone();
    std::fs::create_dir(&root).unwrap_or_else(|e| panic!("mkdir {}: {e}", root.display()));
    Some(s)
}

/// Mounts, or says why not and gives `None` when the kernel lacks the
/// filesystem type (ENODEV); other failures panic.
fn mount_or_skip(s: &mut Scratch, dev: &str, target: &Path, options: Option<&str>) -> Option<()> {
    let kind = s.kind;
    match s.mount(dev, target, options) {
        Ok(()) => Some(()),
        Err(Errno::NODEV) => {
            eprintln!("skipped ({kind}): the kernel has no {kind} (mount: ENODEV)");
            None
        }
        Err(e) => panic!("mount {kind} {dev} on {}: {e}", target.display()),
    }
}

/// What `kind` needs that is missing here, if anything.
fn missing(kind: FsKind) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("needs root to mount".into());
    }
    let (mkfs, _) = kind.mkfs()?;
    if let Some(why) = loop_unavailable() {
        return Some(why.into());
    }
    // find_tool, not have(): mkfs.xfs and mkfs.ext4 know no --version.
    if find_tool(mkfs).is_none() {
        return Some(format!("needs {mkfs}"));
    }
    if kind == FsKind::Btrfs && find_tool("btrfs").is_none() {
        return Some("needs btrfs(8) from btrfs-progs".into());
    }
    None
}
