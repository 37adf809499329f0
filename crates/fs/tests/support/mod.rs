//! The harness of weir-fs's privileged tests: re-executing this test binary
//! in a private mount namespace (or as an unprivileged user), a scratch
//! tmpfs to keep loop images on, and the submodules the tests build on:
//! [`scratch`] filesystems on loop devices, a multi-process [`workload`],
//! a [`sysctl`] set for a test's while,
//! an independent [`tree`] walk to compare a replay against, and the
//! [`journal`] helpers that read a tracker's log back and make that
//! comparison.
//!
//! A test process must never mount in the host's namespace, and the test
//! harness's threads make `unshare(CLONE_NEWNS)` in-process unreliable. So
//! each outer test re-executes the test binary under `unshare -m
//! --propagation private`, running only its `#[ignore]`d inner twin, and
//! asserts that exactly that one test passed there. The inner test refuses
//! to mount unless its namespace differs from the outer one. (The pattern
//! is weir-sys's test support, adapted.)

// Each test binary uses only part of this module.
#![allow(dead_code)]

pub(crate) mod journal;
pub(crate) mod names;
pub(crate) mod rng;
pub(crate) mod run;
pub(crate) mod scratch;
pub(crate) mod sysctl;
pub(crate) mod tree;
pub(crate) mod workload;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rustix::mount::{MountFlags, UnmountFlags};

/// Set (to the mode) in the environment of a re-executed inner test.
const INNER: &str = "WEIR_FS_INNER";
/// The outer test's mount namespace, for the inner one to compare.
const OUTER_NS: &str = "WEIR_FS_OUTER_NS";
/// The base tmpfs's size: room for a few sparse loop images at once
/// (only the blocks a filesystem writes take memory).
const BASE_SIZE: &str = "size=3g";

/// Defines `#[test] #[ignore] fn workload_child()`, the child half of
/// [`workload::run`]; invoke it once at the top level of every test file
/// that calls `workload::run`. Run by hand (`--ignored`), it returns at
/// once: it works only when `workload::run` set its environment.
// A test file that runs no workload does not invoke it.
#[allow(unused_macros)]
macro_rules! workload_child_test {
    () => {
        /// The child half of `support::workload::run`: one process of the
        /// workload, started by it (a plain `--ignored` run does nothing).
        #[test]
        #[ignore = "a child process of support::workload::run"]
        fn workload_child() {
            $crate::support::workload::child_main();
        }
    };
}
// A test file that runs no workload does not use it.
#[allow(unused_imports)]
pub(crate) use workload_child_test;

/// A test of `$body($kind)` in a private mount namespace: `$outer` runs
/// `$inner` there (see [`run_in_private_ns`]), which is ignored on its own.
// A test file with tests of its own shape does not use it.
#[allow(unused_macros)]
macro_rules! private_ns_test {
    ($outer:ident, $inner:ident, $body:path, $kind:expr) => {
        #[test]
        fn $outer() {
            $crate::support::run_in_private_ns(stringify!($inner));
        }

        #[test]
        #[ignore = "run by its outer test in a private mount namespace"]
        fn $inner() {
            $body($kind);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use private_ns_test;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn mount_ns() -> PathBuf {
    std::fs::read_link("/proc/self/ns/mnt").expect("readlink /proc/self/ns/mnt")
}

/// Runs `inner` (a test of this binary) under `wrapper`, with `INNER=mode`,
/// and asserts it ran and passed.
fn run(wrapper: &[&str], mode: &str, inner: &str) {
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new(wrapper[0])
        .args(&wrapper[1..])
        .arg(&exe)
        .args([
            inner,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(INNER, mode)
        .env(OUTER_NS, mount_ns())
        .output()
        .expect("spawn the inner test");
    check(inner, &out);
    // The inner test's own messages (skips, timings) are the outer test's
    // output too: the harness shows them on failure or with --nocapture.
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
}

fn check(inner: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A filter that matched nothing would also exit 0: demand the one pass.
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "inner test {inner} failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
}

/// Outer half: runs `inner` as root in a new private mount namespace, or
/// skips when that is not possible here.
pub(crate) fn run_in_private_ns(inner: &str) {
    if !is_root() {
        eprintln!("skipped: needs root (CAP_SYS_ADMIN)");
        return;
    }
    if !have("unshare") {
        eprintln!("skipped: needs unshare(1) from util-linux");
        return;
    }
    run(
        &["unshare", "-m", "--propagation", "private"],
        "private",
        inner,
    );
}

/// Outer half: runs `inner` as uid/gid 65534 (nobody), or skips.
pub(crate) fn run_as_nobody(inner: &str) {
    if !is_root() {
        eprintln!("skipped: needs root to switch to uid 65534");
        return;
    }
    if !have("setpriv") {
        eprintln!("skipped: needs setpriv(1) from util-linux");
        return;
    }
    let exe = std::env::current_exe().expect("current_exe");
    if !nobody_can_exec(&exe) {
        eprintln!("skipped: uid 65534 cannot execute {}", exe.display());
        return;
    }
    run(
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ],
        "nobody",
        inner,
    );
}

/// Whether "others" may search every directory up to `exe` and execute it.
fn nobody_can_exec(exe: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let ok =
        |p: &Path, bit: u32| std::fs::metadata(p).is_ok_and(|m| m.permissions().mode() & bit != 0);
    ok(exe, 0o001) && exe.ancestors().skip(1).all(|d| ok(d, 0o001))
}

/// Inner half, unprivileged: true when started by [`run_as_nobody`].
pub(crate) fn inner_as_nobody() -> bool {
    if std::env::var_os(INNER).as_deref() != Some(OsStr::new("nobody")) {
        eprintln!("not run: started by its outer test only");
        return false;
    }
    assert!(!is_root(), "expected to run as uid 65534");
    true
}

/// Panics unless this process runs in the private mount namespace that
/// [`run_in_private_ns`] made: every mount of this module checks it first,
/// so that no test mounts in the host's namespace by mistake.
pub(crate) fn assert_private_ns() {
    assert_eq!(
        std::env::var_os(INNER).as_deref(),
        Some(OsStr::new("private")),
        "refusing to mount: not started by run_in_private_ns"
    );
    let outer = std::env::var_os(OUTER_NS).expect("outer namespace in the environment");
    assert_ne!(
        mount_ns().as_os_str(),
        outer,
        "refusing to mount: not in a private mount namespace"
    );
}

/// A tmpfs mounted on a temporary directory inside the private namespace,
/// lazily unmounted (with all that was mounted under it) on drop.
pub(crate) struct Base {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Base {
    /// The canonical path of the base mount.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Makes directory `name` under the base and returns its path.
    pub(crate) fn mkdir(&self, name: &str) -> PathBuf {
        let p = self.path.join(name);
        std::fs::create_dir_all(&p).expect("mkdir");
        p
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(&self.path, UnmountFlags::DETACH);
    }
}

/// Inner half, privileged: the scratch [`Base`] (a tmpfs of
/// [`BASE_SIZE`], for loop images) when started by [`run_in_private_ns`],
/// `None` otherwise (a plain `--ignored` run).
pub(crate) fn private_base() -> Option<Base> {
    if std::env::var_os(INNER).as_deref() != Some(OsStr::new("private")) {
        eprintln!("not run: started by its outer test only");
        return None;
    }
    assert_private_ns();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonicalize");
    let data = std::ffi::CString::new(BASE_SIZE).expect("no NUL");
    rustix::mount::mount(
        "weir-base",
        &path,
        "tmpfs",
        MountFlags::empty(),
        data.as_c_str(),
    )
    .expect("mount the base tmpfs");
    Some(Base { path, _dir: dir })
}

/// A path as the bytes the kernel reports.
pub(crate) fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_bytes()
}
