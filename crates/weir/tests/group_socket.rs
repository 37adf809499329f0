//! A member of the daemon's group finds the system daemon without
//! `--socket`: a user's default socket is in its runtime directory, where
//! no daemon listens, and the CLI then asks the system daemon on
//! `/run/weir/weir.sock`. A user outside the group is refused there and is
//! told that no daemon answers on either socket.
//!
//! In a private mount namespace, a tmpfs over `/run` holds the system
//! socket and a copy of `/etc/group` with a test group is bound over the
//! real one, so the host's `/run` and group database stay as they are.
//! Needs root, unshare and setpriv; skipped (with a message) otherwise.

#[path = "support/child_lines.rs"]
mod child_lines;
#[path = "support/daemon_child.rs"]
#[allow(dead_code)]
mod daemon_child;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use daemon_child::{Daemon, Scratch, in_private_namespace, on_path};

const SYSTEM_SOCKET: &str = "/run/weir/weir.sock";
const GROUP: &str = "weirtestmembers";
/// The uid the CLI runs as: `nobody`.
const USER: u32 = 65534;

/// A gid no line of the group file uses.
fn free_gid(groups: &str) -> u32 {
    let used: Vec<u32> = groups
        .lines()
        .filter_map(|l| l.split(':').nth(2)?.parse().ok())
        .collect();
    (61000..62000)
        .find(|g| !used.contains(g))
        .expect("a free gid")
}

/// `weir status` as [`USER`], with `groups` as its supplementary groups,
/// and a runtime directory where no daemon listens.
fn status_as_user(groups: Option<u32>, runtime: &Path) -> Output {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid", &USER.to_string(), "--regid", &USER.to_string()]);
    match groups {
        Some(g) => cmd.args(["--groups", &g.to_string()]),
        None => cmd.arg("--clear-groups"),
    };
    cmd.arg("--")
        .arg(env!("CARGO_BIN_EXE_weir"))
        .arg("status")
        .env_remove("WEIR_SOCKET")
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .output()
        .expect("run setpriv")
}

#[test]
fn a_group_member_finds_the_system_daemon_without_socket() {
    if !on_path("setpriv") {
        eprintln!("skipping: setpriv (util-linux) is not installed");
        return;
    }
    if !in_private_namespace("a_group_member_finds_the_system_daemon_without_socket") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    let gid = free_gid(&groups);
    let group_file = tmp.path().join("group");
    std::fs::write(&group_file, format!("{groups}{GROUP}:x:{gid}:\n")).unwrap();
    rustix::mount::mount_bind(&group_file, "/etc/group").expect("bind the group file");
    let _run = Scratch::mount(Path::new("/run"));
    std::fs::create_dir(Path::new(SYSTEM_SOCKET).parent().unwrap()).unwrap();

    let daemon = Daemon::start(
        &tmp.path().join("state"),
        Path::new(SYSTEM_SOCKET),
        &["--access-group", GROUP, "--devices-enabled", "false"],
    );
    let runtime = tmp.path().join("runtime");

    let member = status_as_user(Some(gid), &runtime);
    let text = String::from_utf8_lossy(&member.stdout);
    assert!(
        member.status.success(),
        "{}: {}",
        member.status,
        String::from_utf8_lossy(&member.stderr)
    );
    assert!(text.contains(SYSTEM_SOCKET), "{text}");

    let outsider = status_as_user(None, &runtime);
    let err = String::from_utf8_lossy(&outsider.stderr);
    assert_eq!(outsider.status.code(), Some(3), "{err}");
    let both = format!(
        "no daemon answers on {} or {SYSTEM_SOCKET}",
        runtime.join("weir.sock").display()
    );
    assert!(err.contains(&both), "{err}");

    daemon.stop();
    let _ = rustix::mount::unmount("/etc/group", rustix::mount::UnmountFlags::DETACH);
}
