//! A fanotify filesystem mark on btrfs whose attached mount is of a
//! subvolume other than the top level: refused through the subvolume's
//! path (`EXDEV`), placed through the opened root of a detached mount of
//! the top level (its own `O_PATH` fd is refused), kept after both fds
//! are closed, and reporting changes inside and outside the subvolume with
//! the top level's fsid. Also the errnos of detached mounts refused.
//!
//! The filesystem is made on a loop device backed by a file in the scratch
//! tmpfs, all inside a private mount namespace (see `support`); the loop
//! device is detached by its path, also when the test fails.

mod support;

use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};
use weir_sys::Error;
use weir_sys::fanotify::fid::{
    FAN_CREATE, FAN_NOFD, FidGroup, FileHandle, decode_fid_events, name_to_handle_at,
};
use weir_sys::fsmount::{detached_mount, open_root};
use weir_sys::statfs::fsid;

/// mkfs.btrfs refuses devices under 109 MiB.
const IMAGE_BYTES: u64 = 128 << 20;

/// A loop device this test attached, detached (by its path only) on drop.
struct Loop {
    dev: PathBuf,
}

impl Loop {
    fn attach(backing: &Path) -> Loop {
        let out = Command::new("losetup")
            .args(["--show", "-f"])
            .arg(backing)
            .output()
            .expect("run losetup");
        assert!(
            out.status.success(),
            "losetup --show -f: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let dev = String::from_utf8(out.stdout).expect("losetup prints a path");
        Loop {
            dev: PathBuf::from(dev.trim()),
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let ok = Command::new("losetup")
            .arg("-d")
            .arg(&self.dev)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("could not detach {}", self.dev.display());
        }
    }
}

/// A mount this test made, unmounted by [`Mounted::unmount`] or, when the
/// test fails first, lazily on drop.
struct Mounted {
    path: PathBuf,
}

impl Mounted {
    fn new(dev: &Path, path: PathBuf, data: Option<&std::ffi::CStr>) -> Mounted {
        rustix::mount::mount(dev, &path, "btrfs", MountFlags::empty(), data)
            .unwrap_or_else(|e| panic!("mount {} on {}: {e}", dev.display(), path.display()));
        Mounted { path }
    }

    fn unmount(self) {
        rustix::mount::unmount(&self.path, UnmountFlags::empty())
            .unwrap_or_else(|e| panic!("umount {}: {e}", self.path.display()));
        std::mem::forget(self);
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(&self.path, UnmountFlags::DETACH);
    }
}

fn run(cmd: &str, args: &[&std::ffi::OsStr]) {
    let out = Command::new(cmd).args(args).output().expect(cmd);
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// An event's records, copied out of the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ev {
    mask: u64,
    fsids: Vec<[u32; 2]>,
    dir_name: Option<(FileHandle, Vec<u8>)>,
    target: Option<FileHandle>,
}

/// Reads until the queue is empty.
fn drain(g: &mut FidGroup) -> Vec<Ev> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = g.read(&mut buf).expect("read");
        if n == 0 {
            return out;
        }
        decode_fid_events(&buf[..n], |e| {
            assert_eq!(e.fd, FAN_NOFD);
            out.push(Ev {
                mask: e.mask,
                fsids: [e.dir_name, e.old, e.new]
                    .into_iter()
                    .flatten()
                    .map(|d| d.dir.fsid)
                    .chain(e.target.map(|t| t.fsid))
                    .collect(),
                dir_name: e
                    .dir_name
                    .map(|d| (d.dir.to_handle().unwrap(), d.name.to_vec())),
                target: e.target.map(|t| t.to_handle().unwrap()),
            });
        })
        .expect("the kernel's events decode");
    }
}

fn handle(p: &Path) -> FileHandle {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    name_to_handle_at(CWD, &c, 0).expect("name_to_handle_at").0
}

/// The one event `evs` should hold: a CREATE of `name` in `dir`, with the
/// `top` fsid in every record.
fn assert_one_create(evs: &[Ev], dir: &Path, name: &str, top: [u32; 2]) {
    assert_eq!(evs.len(), 1, "{evs:#?}");
    let e = &evs[0];
    assert_eq!(e.mask, FAN_CREATE);
    assert_eq!(e.fsids, [top, top]);
    assert_eq!(e.dir_name, Some((handle(dir), name.as_bytes().to_vec())));
    assert_eq!(e.target, Some(handle(&dir.join(name))));
}

fn dir_fd(p: &Path) -> std::os::fd::OwnedFd {
    rustix::fs::open(p, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).expect("open a dir")
}

#[test]
fn subvolume_is_marked_through_a_detached_top_level() {
    if !Path::new("/dev/loop-control").exists() {
        eprintln!("skipped: no /dev/loop-control");
        return;
    }
    if !support::have_tools(&["mkfs.btrfs", "btrfs", "losetup"]) {
        return;
    }
    support::run_in_private_ns("inner_subvolume_is_marked_through_a_detached_top_level");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_subvolume_is_marked_through_a_detached_top_level() {
    let Some(base) = support::private_base() else {
        return;
    };
    let image = base.path().join("btrfs.img");
    File::create(&image).unwrap().set_len(IMAGE_BYTES).unwrap();
    let lo = Loop::attach(&image);
    let dev = lo.dev.clone();
    run(
        "mkfs.btrfs",
        &["-q".as_ref(), "-f".as_ref(), dev.as_os_str()],
    );
    let top = Mounted::new(&dev, base.mkdir("top"), None);
    let sv_path = top.path.join("sv");
    run(
        "btrfs",
        &[
            "-q".as_ref(),
            "subvolume".as_ref(),
            "create".as_ref(),
            sv_path.as_os_str(),
        ],
    );
    let sv = Mounted::new(&dev, base.mkdir("sv"), Some(c"subvol=sv"));

    let mut g = FidGroup::open().expect("fanotify_init with file ids (5.17+)");
    let e = g
        .mark_filesystem(&sv.path, FAN_CREATE)
        .expect_err("a filesystem mark through a subvolume's path");
    assert_eq!(e.errno(), Some(Errno::XDEV), "{e}");

    // The refusals keep their call and errno.
    let refused = |fstype, source: &Path, options: &[(&str, &str)]| {
        detached_mount(fstype, source, options, true).expect_err("a refused detached mount")
    };
    let call_errno = |e: Error| match e {
        Error::Syscall { call, errno } => (call, errno),
        e => panic!("{e}"),
    };
    assert_eq!(
        call_errno(refused("weir-no-such-fs", &dev, &[])),
        ("fsopen", Errno::NODEV)
    );
    assert_eq!(
        call_errno(refused("btrfs", &dev, &[("weir-no-such-option", "1")])),
        ("fsconfig FSCONFIG_SET_STRING", Errno::INVAL)
    );
    assert_eq!(
        call_errno(refused("btrfs", &base.path().join("missing"), &[])),
        ("fsconfig FSCONFIG_CMD_CREATE", Errno::NOENT)
    );
    assert_eq!(
        call_errno(refused("btrfs", &image, &[])),
        ("fsconfig FSCONFIG_CMD_CREATE", Errno::NOTBLK)
    );

    let det = detached_mount("btrfs", &dev, &[("subvolid", "5")], true)
        .expect("a detached mount of the top level");
    let top_fsid = fsid(det.as_fd()).unwrap();
    let sv_fsid = fsid(dir_fd(&sv.path).as_fd()).unwrap();
    assert_ne!(top_fsid, sv_fsid);
    assert_eq!(fsid(dir_fd(&top.path).as_fd()).unwrap(), top_fsid);
    // The detached mount is read-only; the superblock is not (below, the
    // files are made through the attached mounts).
    let e = rustix::fs::openat(
        &det,
        "x",
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .expect_err("a create on the read-only detached mount");
    assert_eq!(e, Errno::ROFS);
    // The mount's own fd is O_PATH, which fanotify_mark refuses without a
    // path; its root, opened, is marked.
    let e = g
        .mark_filesystem_fd(det.as_fd(), FAN_CREATE)
        .expect_err("a filesystem mark through an O_PATH fd");
    assert_eq!(e.errno(), Some(Errno::BADF), "{e}");
    let root = open_root(det.as_fd()).expect("open the detached mount's root");
    g.mark_filesystem_fd(root.as_fd(), FAN_CREATE)
        .expect("a filesystem mark through the detached mount");
    drop(root);
    drop(det);
    assert_eq!(drain(&mut g), []);

    // In the subvolume: one CREATE, with the top level's fsid and the ids
    // name_to_handle_at gives through the subvolume's mount.
    File::create(sv.path.join("f")).unwrap();
    assert_one_create(&drain(&mut g), &sv.path, "f", top_fsid);

    // In the top level, outside the subvolume: reported too.
    File::create(top.path.join("g")).unwrap();
    assert_one_create(&drain(&mut g), &top.path, "g", top_fsid);

    // Removed through another detached mount, the mark reports no more;
    // a second removal finds none.
    let det = detached_mount("btrfs", &dev, &[("subvolid", "5")], true).unwrap();
    let root = open_root(det.as_fd()).unwrap();
    drop(det);
    g.unmark_filesystem_fd(root.as_fd(), FAN_CREATE).unwrap();
    File::create(sv.path.join("h")).unwrap();
    assert_eq!(drain(&mut g), []);
    let e = g
        .unmark_filesystem_fd(root.as_fd(), FAN_CREATE)
        .unwrap_err();
    assert_eq!(e.errno(), Some(Errno::NOENT), "{e}");
    drop(root);

    // With the fds closed and the attached mounts gone, nothing holds the
    // superblock: the device opens exclusively again.
    drop(g);
    sv.unmount();
    top.unmount();
    rustix::fs::open(
        &dev,
        OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("an exclusive open of the unmounted device");
    drop(lo);
}

#[test]
fn unprivileged_detached_mount_is_eperm() {
    support::run_as_nobody("inner_unprivileged_detached_mount_is_eperm");
}

#[test]
#[ignore = "run by its outer test as uid 65534"]
fn inner_unprivileged_detached_mount_is_eperm() {
    if !support::inner_as_nobody() {
        return;
    }
    let e = detached_mount("tmpfs", Path::new("none"), &[], true)
        .expect_err("an unprivileged detached mount");
    assert_eq!(
        e,
        Error::Syscall {
            call: "fsopen",
            errno: Errno::PERM
        }
    );
}
