//! What `Tracker::start` refuses, and with which error: a filesystem
//! without file handles (procfs, and an overlayfs without `nfs_export`:
//! both `Error::Unwatchable`, the kernel's EOPNOTSUPP kept as the source),
//! a root that is a file (`NotADirectory`), roots that overlap
//! (`Overlap`), and a caller without `CAP_SYS_ADMIN` (`NotPrivileged`,
//! whose message names the capability).
//!
//! A refused watch is the one place a user learns why weir cannot journal
//! a tree, so each refusal must be its own variant (a caller matches on
//! it: `weir fs watch` words its advice from it) and its message must say
//! what to do. A wrong variant (say `Kernel`, "needs Linux 5.17", for a
//! missing privilege) sends the user the wrong way.
//!
//! Also checked, since the overlap rule compares paths: roots that merely
//! share a string prefix (`a` and `ab`) are not overlapping, and a root
//! named through a symlink overlaps the directory it resolves into.

mod support;

use std::ffi::CString;
use std::path::{Path, PathBuf};

use rustix::mount::MountFlags;
use support::scratch::{FsKind, scratch};
use weir_fs::{Error, Tracker, TrackerOptions};

/// Starts a tracker without a log on `roots` and returns its error;
/// panics if it started (after stopping it).
fn refusal<P: AsRef<Path>>(roots: &[P]) -> Error {
    let roots: Vec<PathBuf> = roots.iter().map(|p| p.as_ref().to_path_buf()).collect();
    let opts = TrackerOptions {
        roots: roots.clone(),
        ..TrackerOptions::default()
    };
    match Tracker::start(None, opts, None) {
        Ok(t) => {
            let _ = t.stop();
            panic!("watching {roots:?} was not refused");
        }
        Err(e) => e,
    }
}

/// The error and its sources, for messages.
fn chain(e: &Error) -> String {
    let mut s = e.to_string();
    let mut at: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(c) = at {
        s.push_str(&format!(": {c}"));
        at = c.source();
    }
    s
}

#[test]
fn procfs_is_unwatchable() {
    support::run_in_private_ns("inner_procfs_is_unwatchable");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_procfs_is_unwatchable() {
    if support::private_base().is_none() {
        return;
    }
    let e = refusal(&[Path::new("/proc")]);
    eprintln!("/proc refused: {}", chain(&e));
    match &e {
        Error::Unwatchable {
            path,
            fstype,
            reason,
            ..
        } => {
            assert_eq!(path, Path::new("/proc"));
            assert_eq!(fstype, "proc");
            assert!(!reason.is_empty(), "no reason given");
            // The message names the filesystem type and gives the reason.
            let msg = e.to_string();
            assert!(
                msg.contains("proc") && msg.contains(reason),
                "message: {msg}"
            );
        }
        other => panic!(
            "/proc: expected Unwatchable, got {other:?} ({})",
            chain(other)
        ),
    }
}

#[test]
fn overlayfs_is_unwatchable() {
    support::run_in_private_ns("inner_overlayfs_is_unwatchable");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_overlayfs_is_unwatchable() {
    let Some(base) = support::private_base() else {
        return;
    };
    // Layers on the base tmpfs, the overlay mounted in the private
    // namespace only.
    let (lower, upper, work, merged) = (
        base.mkdir("lower"),
        base.mkdir("upper"),
        base.mkdir("work"),
        base.mkdir("merged"),
    );
    std::fs::create_dir(lower.join("d")).expect("mkdir lower/d");
    // Without an index there is no nfs_export, so no decodable file
    // handles, whatever the kernel's default: the case weir refuses.
    let data = CString::new(format!(
        "lowerdir={},upperdir={},workdir={},index=off,nfs_export=off",
        lower.display(),
        upper.display(),
        work.display()
    ))
    .expect("no NUL");
    match rustix::mount::mount(
        "weir-overlay",
        &merged,
        "overlay",
        MountFlags::empty(),
        data.as_c_str(),
    ) {
        Ok(()) => {}
        Err(rustix::io::Errno::NODEV) => {
            eprintln!("skipped: the kernel has no overlayfs (mount: ENODEV)");
            return;
        }
        Err(e) => panic!("mount overlay on {}: {e}", merged.display()),
    }
    // The overlay's root and a directory below it (from the lower layer):
    // both are refused the same way.
    for root in [merged.clone(), merged.join("d")] {
        let e = refusal(&[&root]);
        eprintln!("overlay refused: {}", chain(&e));
        match &e {
            Error::Unwatchable {
                path,
                fstype,
                source,
                ..
            } => {
                assert_eq!(path, &root);
                assert_eq!(fstype, "overlay");
                // The kernel refuses a filesystem mark it cannot decode
                // handles on with EOPNOTSUPP.
                assert_eq!(
                    source.errno(),
                    Some(rustix::io::Errno::OPNOTSUPP),
                    "{source}"
                );
            }
            other => panic!(
                "{}: expected Unwatchable, got {other:?} ({})",
                root.display(),
                chain(other)
            ),
        }
    }
}

#[test]
fn a_file_is_not_a_directory() {
    support::run_in_private_ns("inner_a_file_is_not_a_directory");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_a_file_is_not_a_directory() {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(FsKind::Tmpfs, base.path()) else {
        return;
    };
    let file = s.root().join("f");
    std::fs::write(&file, b"x").expect("write f");
    // A symlink to the file too: the root is what the link resolves to.
    let link = s.root().join("l");
    std::os::unix::fs::symlink(&file, &link).expect("symlink");
    for p in [&file, &link] {
        match refusal(&[p]) {
            Error::NotADirectory { path } => assert_eq!(path, file),
            other => panic!(
                "{}: expected NotADirectory, got {other:?} ({})",
                p.display(),
                chain(&other)
            ),
        }
    }
}

#[test]
fn overlapping_roots_are_refused() {
    support::run_in_private_ns("inner_overlapping_roots_are_refused");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_overlapping_roots_are_refused() {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(FsKind::Tmpfs, base.path()) else {
        return;
    };
    let outer = s.root().to_path_buf();
    let inner = outer.join("sub");
    let deep = inner.join("deeper");
    std::fs::create_dir_all(&deep).expect("mkdir sub/deeper");
    let link = outer.join("link-to-sub");
    std::os::unix::fs::symlink(&inner, &link).expect("symlink");
    // Either order names the same inner and outer root.
    expect_overlap(&[&outer, &inner], &inner, &outer);
    expect_overlap(&[&inner, &outer], &inner, &outer);
    expect_overlap(&[&outer, &deep], &deep, &outer);
    // The same root twice overlaps itself.
    expect_overlap(&[&inner, &inner], &inner, &inner);
    // Through a symlink: the resolved path is inside `outer`.
    expect_overlap(&[&outer, &link], &inner, &outer);
    // A third root after two good ones is still checked against both.
    let other = outer.join("other");
    std::fs::create_dir(&other).expect("mkdir other");
    expect_overlap(&[&inner, &other, &deep], &deep, &inner);

    // Not overlapping: siblings whose names share a prefix. They start,
    // and both are watched.
    let (a, ab) = (outer.join("a"), outer.join("ab"));
    std::fs::create_dir(&a).expect("mkdir a");
    std::fs::create_dir(&ab).expect("mkdir ab");
    let t = Tracker::start(
        None,
        TrackerOptions {
            roots: vec![a.clone(), ab.clone()],
            ..TrackerOptions::default()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("watching a and ab: {}", chain(&e)));
    let watched: Vec<PathBuf> = t.roots().into_iter().map(|r| r.path).collect();
    t.stop().expect("stop");
    assert_eq!(watched, vec![a, ab]);
}

/// Asserts that watching `roots` is refused as an overlap of `want_inner`
/// inside `want_outer`.
fn expect_overlap(roots: &[&PathBuf], want_inner: &Path, want_outer: &Path) {
    match refusal(roots) {
        Error::Overlap { inner, outer } => assert_eq!(
            (inner.as_path(), outer.as_path()),
            (want_inner, want_outer),
            "{roots:?}"
        ),
        other => panic!(
            "{roots:?}: expected Overlap, got {other:?} ({})",
            chain(&other)
        ),
    }
}

#[test]
fn an_unprivileged_watch_is_refused() {
    support::run_as_nobody("inner_an_unprivileged_watch_is_refused");
}

/// A directory on a tmpfs that uid 65534 may open, if the host has one.
fn tmpfs_dir_for_nobody() -> Option<PathBuf> {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    ["/dev/shm", "/run", "/tmp"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| {
            rustix::fs::statfs(p).is_ok_and(|st| st.f_type as u64 == TMPFS_MAGIC)
                && rustix::fs::open(
                    p,
                    rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
                    rustix::fs::Mode::empty(),
                )
                .is_ok()
        })
}

#[test]
#[ignore = "run by its outer test as uid 65534"]
fn inner_an_unprivileged_watch_is_refused() {
    if !support::inner_as_nobody() {
        return;
    }
    let Some(dir) = tmpfs_dir_for_nobody() else {
        eprintln!("skipped: no tmpfs directory (/dev/shm, /run, /tmp) that uid 65534 can open");
        return;
    };
    let e = refusal(&[&dir]);
    match &e {
        Error::NotPrivileged { path, source } => {
            assert_eq!(path, &dir.canonicalize().expect("canonicalize"));
            let msg = e.to_string();
            assert!(msg.contains("CAP_SYS_ADMIN"), "message: {msg}");
            // The kernel's refusal is kept as the source.
            assert_eq!(source.errno(), Some(rustix::io::Errno::PERM), "{source}");
        }
        other => panic!(
            "{}: expected NotPrivileged, got {other:?} ({})",
            dir.display(),
            chain(other)
        ),
    }
}
