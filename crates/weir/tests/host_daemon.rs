//! `weir run` as a daemon, end to end: its configuration from file,
//! environment and flags; a clean stop on SIGTERM (exit 0, a `weir stopped`
//! MARK, a clean checkpoint, the socket removed); a restart that logs the
//! mounts made while it was down as reconciled; the socket's guard against
//! a second daemon and its stale-file cleanup; socket activation.
//!
//! The daemon tests that mount run inside a private mount namespace: the
//! test re-executes itself for that one test under
//! `unshare -m --propagation private`, so its mounts die with it.

#[path = "support/child_lines.rs"]
mod child_lines;
// Each test uses a part of it.
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use child_lines::{Reap, lines_of, wait_line};
use daemon_child::{in_private_namespace, on_path};
use rustix::process::{Pid, Signal, kill_process};
use weir_log::{FLAG_RECONCILED, LogRecord, Reader, RecordType};

const PATIENCE: Duration = Duration::from_secs(30);

/// `weir ARGS...` with a clean environment for the daemon.
fn weir(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
    c.args(args)
        .env_remove("WEIR_SOCKET")
        .env_remove("NOTIFY_SOCKET")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null());
    c
}

/// A running `weir run`, its stderr as lines.
struct Daemon {
    child: Reap,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Daemon {
    fn start(mut cmd: Command) -> Daemon {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weir run");
        let lines = lines_of(child.stderr.take().expect("stderr"));
        Daemon {
            child: Reap(child),
            lines,
            seen: Vec::new(),
        }
    }

    fn wait_ready(&mut self) {
        wait_line(&self.lines, &mut self.seen, PATIENCE, "weir ready", |l| {
            l.contains("weir ready")
        });
    }

    /// SIGTERM; asserts a clean exit.
    fn stop(mut self) {
        kill_process(Pid::from_child(&self.child.0), Signal::TERM).expect("SIGTERM");
        let st = self.child.wait_exit(PATIENCE);
        // Whatever it said last, for the failure message.
        self.seen.extend(self.lines.try_iter());
        assert!(st.success(), "weir run exited with {st}: {:#?}", self.seen);
    }
}

fn run_cmd(state: &Path, socket: &Path, extra: &[&str]) -> Command {
    // No /etc/weir/weir.toml of the machine's.
    let mut c = weir(&["run", "--config", "/dev/null", "--state-dir"]);
    c.arg(state).arg("--socket").arg(socket).args(extra);
    c
}

fn records(state: &Path) -> Vec<LogRecord> {
    Reader::open_dir(state.join("log"), 1)
        .collect::<Result<_, _>>()
        .expect("read the log")
}

fn is_mark(r: &LogRecord, name: &str) -> bool {
    r.kind == RecordType::MARK && r.name == name.as_bytes()
}

/// `GET path` over the socket: the status code and the body.
fn get(socket: &Path, path: &str) -> (u16, String) {
    let mut s = UnixStream::connect(socket).expect("connect to the daemon");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read the answer");
    let code = answer
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (code, body)
}

/// Whether the machine has the socket's default group.
fn weir_group_exists() -> bool {
    std::fs::read_to_string("/etc/group").is_ok_and(|g| g.lines().any(|l| l.starts_with("weir:")))
}

fn tmpfs(target: &Path) {
    std::fs::create_dir_all(target).unwrap();
    rustix::mount::mount(
        "weirhost",
        target,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        None,
    )
    .expect("mount tmpfs");
}

/// A restart loses no change, and the stop keeps its contract:
/// SIGTERM gives exit 0, a `weir stopped` MARK last, a clean checkpoint and
/// no socket file; mounts made while down come back as reconciled records.
#[test]
fn stops_cleanly_and_reconciles_what_changed_while_down() {
    if !in_private_namespace("stops_cleanly_and_reconciles_what_changed_while_down") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let state = dir.join("state");
    let socket = dir.join("run/weir.sock");
    // A stale socket: bound once, nobody listening any more.
    std::fs::create_dir(dir.join("run")).unwrap();
    drop(UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());

    let mut d = Daemon::start(run_cmd(&state, &socket, &["--devices-enabled", "false"]));
    d.wait_ready();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, if weir_group_exists() { 0o660 } else { 0o600 });
    let (code, body) = get(&socket, "/v1/status");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(&*state.to_string_lossy()), "{body}");

    // A second daemon on the same socket refuses to start, and the first
    // keeps answering.
    let other = weir_output(run_cmd(
        &dir.join("other"),
        &socket,
        &["--devices-enabled", "false"],
    ));
    assert_eq!(other.status.code(), Some(1));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("already answering"), "{err}");
    assert_eq!(get(&socket, "/v1/status").0, 200);

    d.stop();
    assert!(!socket.exists(), "the socket is removed at stop");
    let first = records(&state);
    let last = first.last().expect("records");
    assert!(is_mark(last, "weir stopped"), "{last:?}");
    assert_eq!(last.field("signal"), Some(&b"SIGTERM"[..]));
    assert!(
        first
            .iter()
            .any(|r| is_mark(r, "weir no previous inventory"))
    );
    let cp = weir_daemon::checkpoint::read(&state.join("inventory"))
        .unwrap()
        .expect("a checkpoint");
    assert!(cp.clean);
    assert!(cp.devices.is_none(), "devices were off");
    let mounts = cp.mounts.expect("the mount table");
    assert!(mounts.log_index > 0 && mounts.log_index < last.index);
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(cp.boot_id, boot.trim());

    // While no daemon watches.
    let made: Vec<PathBuf> = (0..5).map(|i| dir.join(format!("down{i}"))).collect();
    for p in &made {
        tmpfs(p);
    }

    let mut d = Daemon::start(run_cmd(&state, &socket, &["--devices-enabled", "false"]));
    d.wait_ready();
    d.stop();
    let all = records(&state);
    let restart = all
        .iter()
        .rposition(|r| is_mark(r, "weir started"))
        .expect("the second start");
    let second = &all[restart..];
    assert!(
        !second
            .iter()
            .any(|r| is_mark(r, "weir no previous inventory"))
    );
    for p in &made {
        let name = p.as_os_str().as_encoded_bytes();
        let found = second
            .iter()
            .find(|r| r.kind == RecordType::MOUNT_ATTACH && r.name == name);
        let r = found.unwrap_or_else(|| panic!("no MOUNT_ATTACH for {p:?} after the restart"));
        assert_ne!(r.flags & FLAG_RECONCILED, 0, "{p:?} not flagged reconciled");
    }
    assert!(is_mark(all.last().unwrap(), "weir stopped"));
}

fn weir_output(mut cmd: Command) -> std::process::Output {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run weir")
}

/// A socket that is not a socket is never removed.
#[test]
fn refuses_to_replace_a_file_that_is_not_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("weir.sock");
    std::fs::write(&socket, b"precious").unwrap();
    let out = weir_output(run_cmd(&dir.path().join("state"), &socket, &[]));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a socket"));
    assert_eq!(std::fs::read(&socket).unwrap(), b"precious");
}

/// A bad value stops `weir run` before it creates anything, naming the key
/// and its flag.
#[test]
fn bad_configuration_is_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let out = weir_output(run_cmd(
        &state,
        &dir.path().join("s"),
        &["--log-ring-slots", "3"],
    ));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("log.ring_slots") && err.contains("--log-ring-slots"),
        "{err}"
    );
    assert!(!state.exists());

    let file = dir.path().join("weir.toml");
    std::fs::write(&file, "[mounts]\nbudget = 3\n").unwrap();
    let mut c = weir(&["run", "--config"]);
    c.arg(&file);
    let out = weir_output(c);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mounts.budget"), "{err}");
}

/// Flags beat the environment, which beats the file, which beats the
/// defaults.
#[test]
fn flags_environment_file_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("weir.toml");
    std::fs::write(
        &file,
        "socket = \"/from/file.sock\"\nstate_dir = \"/from/file\"\n\
         [mounts]\nbudget_percent = 2.0\naudit_secs = 7\n",
    )
    .unwrap();
    let config = |env: Option<&str>, extra: &[&str]| -> toml::Table {
        let mut c = weir(&["run", "--print-config", "--config"]);
        c.arg(&file).args(extra);
        if let Some(s) = env {
            c.env("WEIR_SOCKET", s);
        }
        let out = weir_output(c);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .parse()
            .expect("TOML")
    };
    let t = config(None, &[]);
    assert_eq!(t["socket"].as_str(), Some("/from/file.sock"));
    assert_eq!(t["state_dir"].as_str(), Some("/from/file"));
    assert_eq!(t["mounts"]["budget_percent"].as_float(), Some(2.0));
    assert_eq!(t["log"]["flush_ms"].as_integer(), Some(10), "a default");
    let t = config(Some("/from/env.sock"), &["--mounts-budget-percent", "3"]);
    assert_eq!(t["socket"].as_str(), Some("/from/env.sock"));
    assert_eq!(t["mounts"]["budget_percent"].as_float(), Some(3.0));
    assert_eq!(t["mounts"]["audit_secs"].as_integer(), Some(7));
    let t = config(
        Some("/from/env.sock"),
        &[
            "--socket",
            "/from/flag.sock",
            "--state-dir",
            "/from/flag",
            "--mounts-enabled",
            "false",
        ],
    );
    assert_eq!(t["socket"].as_str(), Some("/from/flag.sock"));
    assert_eq!(t["state_dir"].as_str(), Some("/from/flag"));
    assert_eq!(t["mounts"]["enabled"].as_bool(), Some(false));
}

/// Socket activation: `systemd-socket-activate` binds the socket and
/// passes it; the daemon serves on it, and leaves the file to its owner.
#[test]
fn serves_on_an_activated_socket() {
    if !on_path("systemd-socket-activate") {
        eprintln!("skipping: systemd-socket-activate is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("activated.sock");
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.arg("-l")
        .arg(&socket)
        .args(["-E", "RUST_LOG=info"])
        .arg(env!("CARGO_BIN_EXE_weir"))
        .args([
            "run",
            "--mounts-enabled",
            "false",
            "--devices-enabled",
            "false",
            "--state-dir",
        ])
        .arg(dir.path().join("state"))
        // Not used: the passed socket wins.
        .arg("--socket")
        .arg(dir.path().join("configured.sock"))
        .stdin(Stdio::null());
    let mut d = Daemon::start(cmd);
    // The activator binds first; the daemon may start on the first
    // connection, which then waits in the backlog.
    let deadline = std::time::Instant::now() + PATIENCE;
    while !socket.exists() {
        assert!(std::time::Instant::now() < deadline, "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (code, body) = get(&socket, "/v1/status");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("activated.sock"), "{body}");
    d.wait_ready();
    assert!(!dir.path().join("configured.sock").exists());
    d.stop();
    assert!(socket.exists(), "the activator's socket is left in place");
}

/// systemd's protocol: READY=1 with a STATUS line once up, WATCHDOG=1 at
/// half the interval while healthy, STOPPING=1 at the end.
#[test]
fn tells_systemd_ready_healthy_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let notify = dir.path().join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&notify).unwrap();
    sock.set_read_timeout(Some(PATIENCE)).unwrap();
    // WATCHDOG_PID must be the daemon's: the shell's pid, kept across exec.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "WATCHDOG_PID=$$ exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_weir"))
        .args(["run", "--devices-enabled", "false", "--state-dir"])
        .arg(dir.path().join("state"))
        .arg("--socket")
        .arg(dir.path().join("weir.sock"))
        .env_remove("WEIR_SOCKET")
        .env("RUST_LOG", "info")
        .env("NOTIFY_SOCKET", &notify)
        .env("WATCHDOG_USEC", "400000")
        .stdin(Stdio::null());
    let d = Daemon::start(cmd);
    let mut messages = Vec::new();
    let mut recv = || {
        let mut buf = [0u8; 4096];
        let n = sock.recv(&mut buf).expect("a notification");
        let m = String::from_utf8_lossy(&buf[..n]).into_owned();
        messages.push(m.clone());
        m
    };
    let ready = loop {
        let m = recv();
        if m.contains("READY=1") {
            break m;
        }
    };
    assert!(ready.contains("STATUS=tracking "), "{ready:?}");
    assert!(
        ready.contains(" mounts") || ready.contains(" mount"),
        "{ready:?}"
    );
    // Pings at half the 400 ms interval: a few come quickly.
    let mut pings = 0;
    while pings < 3 {
        if recv().contains("WATCHDOG=1") {
            pings += 1;
        }
    }
    d.stop();
    loop {
        if recv().contains("STOPPING=1") {
            break;
        }
    }
}

/// A damaged checkpoint is not fatal: the daemon starts without it, says
/// why in a MARK, and writes a good one.
#[test]
fn starts_without_a_damaged_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let inventory = state.join("inventory");
    std::fs::write(&inventory, b"WEIRINV\0 but then garbage").unwrap();
    let mut d = Daemon::start(run_cmd(
        &state,
        &dir.path().join("weir.sock"),
        &["--devices-enabled", "false"],
    ));
    d.wait_ready();
    d.stop();
    let all = records(&state);
    let mark = all
        .iter()
        .find(|r| is_mark(r, "weir no previous inventory"))
        .expect("the MARK");
    let reason = String::from_utf8_lossy(mark.field("reason").unwrap_or_default());
    assert!(reason.contains("unusable checkpoint"), "{reason}");
    let cp = weir_daemon::checkpoint::read(&inventory)
        .unwrap()
        .expect("rewritten");
    assert!(cp.clean && cp.mounts.is_some());
}
