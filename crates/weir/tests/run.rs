//! `weir run`: it marks its start in the log, holds the writer lock, and on
//! SIGTERM or SIGINT marks its stop, closes the log and exits 0.

mod support;

use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use support::Weir;
use weir_log::{LogRecord, Reader, RecordType};

const PATIENCE: Duration = Duration::from_secs(20);

fn records(w: &Weir) -> Vec<LogRecord> {
    if !w.log_dir().exists() {
        return Vec::new();
    }
    Reader::open_dir(w.log_dir(), 1)
        .collect::<Result<_, _>>()
        .expect("read the log")
}

/// Waits until the log holds a "weir started" MARK from `pid`.
fn wait_started(w: &Weir, child: &mut Child) -> LogRecord {
    let pid = child.id().to_string();
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(r) = records(w).into_iter().find(|r| {
            r.kind == RecordType::MARK
                && r.name == b"weir started"
                && r.field("pid") == Some(pid.as_bytes())
        }) {
            return r;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("weir run exited early: {st}");
        }
        assert!(Instant::now() < deadline, "no start mark from pid {pid}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("weir run did not exit after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn run_and_stop(w: &Weir, sig: Signal, sig_name: &str) {
    let mut child = w
        // The changelog alone: the trackers would add their own records.
        .cmd(&[
            "run",
            "--mounts-enabled",
            "false",
            "--devices-enabled",
            "false",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = wait_started(w, &mut child);
    assert_eq!(
        started.field("version"),
        Some(env!("CARGO_PKG_VERSION").as_bytes())
    );

    // While it runs it holds the log: a direct writer is refused.
    let locked = w.run(&["--direct", "log", "write"], b"x\n");
    assert_eq!(locked.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&locked.stderr).contains("locked"));

    kill_process(Pid::from_child(&child), sig).unwrap();
    let st = wait_exit(&mut child);
    assert!(st.success(), "weir run exited with {st} after {sig_name}");

    let all = records(w);
    let last = all.last().expect("records");
    assert_eq!(last.kind, RecordType::MARK);
    assert_eq!(last.name, b"weir stopped");
    assert_eq!(last.field("signal"), Some(sig_name.as_bytes()));
    assert_eq!(last.index, started.index + 1, "nothing else was written");
}

#[test]
fn run_marks_start_and_stop() {
    let w = Weir::new();
    run_and_stop(&w, Signal::TERM, "SIGTERM");
    // A second run reopens the same log and continues its index.
    run_and_stop(&w, Signal::INT, "SIGINT");
    let names: Vec<Vec<u8>> = records(&w).into_iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            &b"weir started"[..],
            b"weir stopped",
            b"weir started",
            b"weir stopped"
        ]
    );
    assert!(w.ok(&["log", "verify"], b"").contains("4 records"));
}

/// Regression test: a state directory that is a regular file was found out
/// only after the socket was listening, and then as "File exists".
#[test]
fn a_state_dir_that_is_a_file_is_refused_before_listening() {
    let w = Weir::new();
    let file = w.state_dir().join("state");
    std::fs::write(&file, b"not a directory\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .env("WEIR_SOCKET", w.socket())
        .env("RUST_LOG", "info")
        .arg("--state-dir")
        .arg(&file)
        .args(["--config", "/dev/null", "run"])
        .args(["--mounts-enabled", "false", "--devices-enabled", "false"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the state directory {} is not a directory",
            file.display()
        )),
        "{err}"
    );
    assert!(!err.contains("File exists"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    assert!(!w.socket().exists(), "the socket was made");
}
