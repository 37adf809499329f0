//! Running privileged scenarios safely: whether this host can (root, the
//! tools), and a shell script run inside a private mount namespace, so
//! that nothing it mounts is seen outside it or outlives it.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Why privileged tests cannot run here (not root, a missing tool, or
/// namespaces refused), or `None` when they can.
pub(crate) fn missing(tools: &[&str]) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root".to_owned());
    }
    for tool in tools {
        if !on_path(tool) {
            return Some(format!("{tool} not found in PATH"));
        }
    }
    if tools.contains(&"unshare") {
        let ok = Command::new("unshare")
            .args(["-m", "--propagation", "private", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Some("unshare -m does not work here".to_owned());
        }
    }
    None
}

/// Prints why a test is skipped when something it needs is missing; the
/// test returns when this is true.
pub(crate) fn skip(tools: &[&str]) -> bool {
    match missing(tools) {
        Some(why) => {
            eprintln!("skipped: {why}");
            true
        }
        None => false,
    }
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// Runs `script` with `sh` inside a new, private mount namespace, with
/// `args` as `$1`, `$2`...; returns its output.
pub(crate) fn in_private_ns<S: AsRef<OsStr>>(script: &str, args: &[S]) -> Output {
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run unshare")
}

/// Asserts that a script succeeded, showing its output if not.
pub(crate) fn assert_ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A temporary directory by its canonical path: the kernel reports mount
/// points resolved, so comparisons must use the resolved path too.
pub(crate) fn canonical_tempdir() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().expect("temporary directory");
    let p = std::fs::canonicalize(t.path()).expect("canonical path");
    (t, p)
}

/// The path as bytes.
pub(crate) fn bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}
