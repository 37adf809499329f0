//! Test support: running a test's body inside a private mount namespace.
//!
//! Privileged tests must not touch the host's mounts. Each one re-executes
//! this test binary, for that one test, under
//! `unshare -m --propagation private`; the inner run does the mounting and
//! the outer run checks its exit status. Everything the inner run mounts
//! dies with its namespace, even if it panics half-way.

#![allow(dead_code)]

use std::process::Command;

const INNER: &str = "WEIR_MOUNTS_TEST_INNER";

/// Returns true in the inner run, where the test body should run. In the
/// outer run it spawns the inner one, asserts that it passed and returns
/// false; without root or `unshare` it says why the test is skipped.
pub(crate) fn in_private_namespace(test: &str) -> bool {
    if std::env::var(INNER).as_deref() == Ok(test) {
        return true;
    }
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped {test}: needs root (CAP_SYS_ADMIN) to mount");
        return false;
    }
    for tool in ["unshare", "mount", "umount"] {
        if which(tool).is_none() {
            eprintln!("skipped {test}: `{tool}` is not installed (util-linux)");
            return false;
        }
    }
    let exe = std::env::current_exe().expect("current_exe");
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(INNER, test)
        .output()
        .expect("running unshare");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{test} failed in its private namespace ({}):\n{text}\n{err}",
        out.status
    );
    false
}

/// The path of `tool` on $PATH.
pub(crate) fn which(tool: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// Runs a shell command line and panics with its output if it fails.
pub(crate) fn sh(cmd: &str) {
    let out = Command::new("sh").args(["-c", cmd]).output().expect("sh");
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Mounts a fresh tmpfs on `target`, an existing directory.
pub(crate) fn tmpfs(target: &std::path::Path) {
    rustix::mount::mount(
        "weirtest",
        target,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        None,
    )
    .expect("mount tmpfs");
}
