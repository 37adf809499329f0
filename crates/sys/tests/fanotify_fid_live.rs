//! fanotify file-id events from a filesystem mark on a scratch tmpfs, made
//! inside a private mount namespace (see `support`): what each change
//! reports, that the ids are the ones `name_to_handle_at` gives, and that
//! they open again until the object is gone. Also the errnos of marks that
//! cannot be made: procfs (no file handles) and an unprivileged caller.

mod support;

use std::ffi::CString;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use weir_sys::fanotify::fid::{
    FAN_ATTRIB, FAN_CLOSE_WRITE, FAN_CREATE, FAN_DELETE, FAN_DELETE_SELF, FAN_MODIFY, FAN_NOFD,
    FAN_ONDIR, FAN_RENAME, FidGroup, FileHandle, decode_fid_events, name_to_handle_at,
    open_by_handle_at,
};

const MASK: u64 = FAN_CREATE
    | FAN_DELETE
    | FAN_RENAME
    | FAN_ATTRIB
    | FAN_MODIFY
    | FAN_CLOSE_WRITE
    | FAN_DELETE_SELF
    | FAN_ONDIR;

/// An event with its ids copied out of the read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Ev {
    mask: u64,
    fsid: Vec<[u32; 2]>,
    dir_name: Option<(FileHandle, Vec<u8>)>,
    target: Option<FileHandle>,
    old: Option<(FileHandle, Vec<u8>)>,
    new: Option<(FileHandle, Vec<u8>)>,
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
            let dn = |d: Option<weir_sys::fanotify::fid::DirName<'_>>| {
                d.map(|d| (d.dir.to_handle().unwrap(), d.name.to_vec()))
            };
            let fsid = [e.dir_name, e.old, e.new]
                .into_iter()
                .flatten()
                .map(|d| d.dir.fsid)
                .chain(e.target.map(|t| t.fsid))
                .collect();
            out.push(Ev {
                mask: e.mask,
                fsid,
                dir_name: dn(e.dir_name),
                target: e.target.map(|t| t.to_handle().unwrap()),
                old: dn(e.old),
                new: dn(e.new),
            });
        })
        .expect("the kernel's events decode");
    }
}

fn handle(p: &Path) -> FileHandle {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    name_to_handle_at(CWD, &c, 0).expect("name_to_handle_at").0
}

/// The one event whose mask has `bit`, of those in `evs`.
fn the(evs: &[Ev], bit: u64) -> &Ev {
    let with: Vec<_> = evs.iter().filter(|e| e.mask & bit != 0).collect();
    assert_eq!(with.len(), 1, "one event with {bit:#x} in {evs:#?}");
    with[0]
}

#[test]
fn filesystem_mark_reports_ids_and_names() {
    support::run_in_private_ns("inner_filesystem_mark_reports_ids_and_names");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_filesystem_mark_reports_ids_and_names() {
    let Some(base) = support::private_base() else {
        return;
    };
    let root = base.path().to_path_buf();
    let mut g = FidGroup::open().expect("fanotify_init with file ids (5.17+)");
    g.mark_filesystem(&root, MASK)
        .expect("filesystem mark on tmpfs");
    assert_eq!(drain(&mut g), []);
    let root_h = handle(&root);
    let mnt = rustix::fs::open(&root, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();

    // mkdir: CREATE|ONDIR, named in its parent, with the new dir's id.
    let d = root.join("d");
    std::fs::create_dir(&d).unwrap();
    let d_h = handle(&d);
    let evs = drain(&mut g);
    assert_eq!(evs.len(), 1, "{evs:#?}");
    assert_eq!(evs[0].mask, FAN_CREATE | FAN_ONDIR);
    assert_eq!(evs[0].dir_name, Some((root_h, b"d".to_vec())));
    assert_eq!(evs[0].target, Some(d_h));

    // create + close: CREATE (maybe merged with CLOSE_WRITE) with the
    // file's id, the one name_to_handle_at gives.
    let f = d.join("f");
    std::fs::File::create(&f).unwrap();
    let f_h = handle(&f);
    let evs = drain(&mut g);
    let c = the(&evs, FAN_CREATE);
    assert_eq!(c.dir_name, Some((d_h, b"f".to_vec())));
    assert_eq!(c.target, Some(f_h));
    assert!(evs.iter().any(|e| e.mask & FAN_CLOSE_WRITE != 0));

    // write + close: MODIFY and CLOSE_WRITE of the file.
    std::fs::write(&f, b"hello").unwrap();
    let evs = drain(&mut g);
    assert_eq!(the(&evs, FAN_MODIFY).target, Some(f_h));
    assert_eq!(the(&evs, FAN_CLOSE_WRITE).target, Some(f_h));

    // chmod: ATTRIB.
    rustix::fs::chmod(&f, Mode::from_raw_mode(0o600)).unwrap();
    let evs = drain(&mut g);
    let a = the(&evs, FAN_ATTRIB);
    assert_eq!(a.target, Some(f_h));
    assert_eq!(a.dir_name, Some((d_h, b"f".to_vec())));

    // rename to a name that is not UTF-8 and holds a newline: one RENAME
    // with both names and the moved file's id.
    let odd = std::ffi::OsStr::from_bytes(b"g\n\xff");
    let g_path = d.join(odd);
    std::fs::rename(&f, &g_path).unwrap();
    let evs = drain(&mut g);
    let r = the(&evs, FAN_RENAME);
    assert_eq!(r.old, Some((d_h, b"f".to_vec())));
    assert_eq!(r.new, Some((d_h, b"g\n\xff".to_vec())));
    assert_eq!(r.target, Some(f_h));
    assert_eq!(r.dir_name, None);

    // A long name: 255 bytes.
    let long = "x".repeat(255);
    std::fs::File::create(d.join(&long)).unwrap();
    let evs = drain(&mut g);
    assert_eq!(
        the(&evs, FAN_CREATE).dir_name,
        Some((d_h, long.clone().into_bytes()))
    );
    std::fs::remove_file(d.join(&long)).unwrap();
    drain(&mut g);

    // The ids open again while the objects exist: the directory's gives
    // the directory.
    let dfd = open_by_handle_at(mnt.as_fd(), &d_h, OFlags::DIRECTORY | OFlags::CLOEXEC)
        .expect("open_by_handle_at of the directory");
    let (a, b) = (
        rustix::fs::fstat(&dfd).unwrap(),
        rustix::fs::stat(&d).unwrap(),
    );
    assert_eq!((a.st_dev, a.st_ino), (b.st_dev, b.st_ino));

    // unlink of the last link: DELETE_SELF (id only), then DELETE named;
    // the file's id is stale after.
    std::fs::remove_file(&g_path).unwrap();
    let evs = drain(&mut g);
    let del = the(&evs, FAN_DELETE);
    assert_eq!(del.dir_name, Some((d_h, b"g\n\xff".to_vec())));
    assert_eq!(del.target, Some(f_h));
    assert_eq!(the(&evs, FAN_DELETE_SELF).target, Some(f_h));
    let stale = open_by_handle_at(mnt.as_fd(), &f_h, OFlags::RDONLY | OFlags::CLOEXEC)
        .expect_err("a deleted file's handle");
    assert_eq!(stale.errno(), Some(Errno::STALE), "{stale}");

    // rmdir: DELETE_SELF|ONDIR (the dir named "." in itself) and
    // DELETE|ONDIR named in the parent.
    // The open fd would hold the inode, and its DELETE_SELF, back.
    drop(dfd);
    std::fs::remove_dir(&d).unwrap();
    let evs = drain(&mut g);
    let del = the(&evs, FAN_DELETE);
    assert_eq!(del.mask, FAN_DELETE | FAN_ONDIR);
    assert_eq!(del.dir_name, Some((root_h, b"d".to_vec())));
    assert_eq!(del.target, Some(d_h));
    let ds = the(&evs, FAN_DELETE_SELF);
    assert_eq!(ds.mask, FAN_DELETE_SELF | FAN_ONDIR);
    assert_eq!(ds.dir_name, Some((d_h, b".".to_vec())));

    // Every record named the one filesystem.
    let fsids: Vec<_> = evs.iter().flat_map(|e| e.fsid.iter().copied()).collect();
    assert!(fsids.windows(2).all(|p| p[0] == p[1]), "{fsids:?}");

    // procfs cannot encode handles: refused with its errno.
    let e = g
        .mark_filesystem(Path::new("/proc"), FAN_CREATE)
        .expect_err("a filesystem mark on procfs");
    assert!(
        matches!(e.errno(), Some(Errno::OPNOTSUPP | Errno::NODEV)),
        "{e}"
    );

    // Unmarked, the filesystem reports nothing more; a second removal
    // finds no mark.
    g.unmark_filesystem(&root, MASK).unwrap();
    std::fs::create_dir(root.join("after")).unwrap();
    assert_eq!(drain(&mut g), []);
    let e = g.unmark_filesystem(&root, MASK).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::NOENT), "{e}");
}

#[test]
fn unprivileged_filesystem_mark_is_eperm() {
    support::run_as_nobody("inner_unprivileged_filesystem_mark_is_eperm");
}

#[test]
#[ignore = "run by its outer test as uid 65534"]
fn inner_unprivileged_filesystem_mark_is_eperm() {
    if !support::inner_as_nobody() {
        return;
    }
    // The group itself needs no privilege; a filesystem mark does.
    let g = FidGroup::open().expect("unprivileged fanotify_init with file ids");
    let e = g
        .mark_filesystem(&std::env::temp_dir(), FAN_CREATE)
        .expect_err("an unprivileged filesystem mark");
    assert_eq!(e.errno(), Some(Errno::PERM), "{e}");
}

#[test]
fn queued_counts_the_events_not_yet_read() {
    support::run_in_private_ns("inner_queued_counts_the_events_not_yet_read");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_queued_counts_the_events_not_yet_read() {
    let Some(base) = support::private_base() else {
        return;
    };
    let root = base.path().to_path_buf();
    let mut g = FidGroup::open().expect("fanotify_init with file ids (5.17+)");
    g.mark_filesystem(&root, MASK)
        .expect("filesystem mark on tmpfs");
    assert_eq!(g.queued().expect("FIONREAD"), 0);
    // Distinct names, so that no event merges into another: one each.
    for i in 0..37 {
        std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
    }
    assert_eq!(g.queued().expect("FIONREAD"), 37);
    assert_eq!(drain(&mut g).len(), 37);
    assert_eq!(g.queued().expect("FIONREAD"), 0);
}
