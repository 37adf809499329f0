//! A real `weir run` as a child of a live test, in a private mount
//! namespace: the test re-executes itself under
//! `unshare -m --propagation private` (so every mount it and the daemon
//! see dies with it), starts the daemon on a temporary state directory and
//! socket, and kills it on drop if the test fails first. Also the mount
//! guard that undoes a test's mounts, and `weir` commands aimed at the
//! daemon's socket.
//!
//! Needs `child_lines` declared next to it (`crate::child_lines`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

use crate::child_lines::{Reap, lines_of, wait_line};

/// How long the daemon may take to start or stop.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Set in the inner run to the test's name.
const INNER: &str = "WEIR_DAEMON_CHILD_INNER";

/// True in the inner run, inside the namespace, where the test does its
/// work; the outer run spawns it, checks that it passed, and returns false.
/// Without root or `unshare` it says why it skips and returns false.
pub(crate) fn in_private_namespace(test: &str) -> bool {
    if std::env::var(INNER).as_deref() == Ok(test) {
        return true;
    }
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping {test}: needs root to mount");
        return false;
    }
    if !on_path("unshare") {
        eprintln!("skipping {test}: unshare (util-linux) is not installed");
        return false;
    }
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private"])
        .arg(std::env::current_exe().expect("current_exe"))
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(INNER, test)
        .stdin(Stdio::null())
        .output()
        .expect("run unshare");
    let text = String::from_utf8_lossy(&out.stdout);
    // What the inner run reports (timings, counts) shows in the outer one.
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && text.contains("1 passed"),
        "{test} failed in its namespace ({}):\n{text}",
        out.status,
    );
    false
}

pub(crate) fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// `weir --socket SOCKET ARGS...`, with no daemon of the machine's in
/// reach.
pub(crate) fn weir(socket: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
    c.env_remove("WEIR_SOCKET")
        .env_remove("NOTIFY_SOCKET")
        .arg("--socket")
        .arg(socket)
        .args(args)
        .stdin(Stdio::null());
    c
}

/// Runs `cmd`, asserts it succeeded, and returns its stdout.
pub(crate) fn ok(mut cmd: Command) -> Vec<u8> {
    let out: Output = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run weir");
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `weir sync` through the daemon: the index it printed.
pub(crate) fn sync(socket: &Path) -> u64 {
    let out = ok(weir(socket, &["sync"]));
    let text = String::from_utf8_lossy(&out);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("weir sync printed {text:?}"))
}

/// A running `weir run`, its stderr as lines; SIGKILLed on drop.
pub(crate) struct Daemon {
    child: Reap,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Daemon {
    /// Starts `weir run` on `state` and `socket` (with no configuration
    /// file of the machine's) and waits until it says it is ready.
    pub(crate) fn start(state: &Path, socket: &Path, extra: &[&str]) -> Daemon {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_weir"));
        cmd.args(["run", "--config", "/dev/null", "--state-dir"])
            .arg(state)
            .arg("--socket")
            .arg(socket)
            .args(extra)
            .env_remove("WEIR_SOCKET")
            .env_remove("NOTIFY_SOCKET")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn weir run");
        let lines = lines_of(child.stderr.take().expect("stderr"));
        let mut d = Daemon {
            child: Reap(child),
            lines,
            seen: Vec::new(),
        };
        wait_line(&d.lines, &mut d.seen, PATIENCE, "weir ready", |l| {
            l.contains("weir ready")
        });
        d
    }

    /// Starts `weir run` like [`Daemon::start`] and SIGKILLs it `after`
    /// the spawn, wherever it is then: opening the log, reading the
    /// checkpoint, reconciling, or already serving.
    pub(crate) fn kill_while_starting(
        state: &Path,
        socket: &Path,
        extra: &[&str],
        after: Duration,
    ) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_weir"));
        cmd.args(["run", "--config", "/dev/null", "--state-dir"])
            .arg(state)
            .arg("--socket")
            .arg(socket)
            .args(extra)
            .env_remove("WEIR_SOCKET")
            .env_remove("NOTIFY_SOCKET")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = Reap(cmd.spawn().expect("spawn weir run"));
        std::thread::sleep(after);
        kill_process(Pid::from_child(&child.0), Signal::KILL).expect("SIGKILL");
        child.wait_exit(PATIENCE);
    }

    fn pid(&self) -> Pid {
        Pid::from_child(&self.child.0)
    }

    /// SIGKILL, and reaps it: no chance to flush, checkpoint or say
    /// anything.
    pub(crate) fn kill(mut self) {
        kill_process(self.pid(), Signal::KILL).expect("SIGKILL");
        let st = self.child.wait_exit(PATIENCE);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&st),
            Some(9),
            "{st}"
        );
    }

    /// SIGTERM; asserts a clean exit.
    pub(crate) fn stop(mut self) {
        kill_process(self.pid(), Signal::TERM).expect("SIGTERM");
        let st = self.child.wait_exit(PATIENCE);
        self.seen.extend(self.lines.try_iter());
        assert!(st.success(), "weir run exited with {st}: {:#?}", self.seen);
    }
}

/// A client of the daemon's API (the weir-client library).
pub(crate) fn client(socket: &Path) -> weir_client::Client {
    weir_client::Client::connect(socket)
        .expect("connect to the daemon")
        .expect("the daemon answers")
}

/// `GET /v1/status`, parsed.
pub(crate) fn status(c: &mut weir_client::Client) -> serde_json::Value {
    c.get_json("/v1/status").expect("GET /v1/status")
}

/// A tmpfs the test mounts its storm under; on drop it is detached with
/// everything mounted beneath it, so a failed test leaves nothing mounted
/// (the namespace's end would take it too, but not while a daemon child
/// keeps the namespace alive).
pub(crate) struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Mounts a tmpfs on `path` (created if missing).
    pub(crate) fn mount(path: &Path) -> Scratch {
        std::fs::create_dir_all(path).expect("create the scratch directory");
        rustix::mount::mount(
            "weirscratch",
            path,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            None,
        )
        .expect("mount the scratch tmpfs");
        Scratch {
            path: path.to_owned(),
        }
    }

    /// Where it is mounted.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = rustix::mount::unmount(&self.path, rustix::mount::UnmountFlags::DETACH);
    }
}

/// The path as bytes, as the kernel and the log hold it.
pub(crate) fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}
