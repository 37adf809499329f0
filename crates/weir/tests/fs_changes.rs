//! `weir fs changes PATH --since INDEX`: changes made in a tree a real
//! `weir fs watch` logs come back, coalesced, from the log read directly
//! (`--direct`); an index before the watch started is `fresh`. Runs in a
//! private mount namespace on tmpfs; needs root and unshare, skipped
//! (with a message) otherwise.

#[path = "../../fs/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::scratch::{FsKind, scratch};

support::workload_child_test!();

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// A running `weir fs watch`, stopped by `stop` (killed on drop).
struct Watcher(std::process::Child);

impl Watcher {
    /// Starts it and waits until it watches (its tree read).
    fn start(state: &Path, root: &Path) -> Watcher {
        let mut child = Command::new(WEIR)
            .arg("--state-dir")
            .arg(state)
            .args(["fs", "watch", "--quiet"])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn weir fs watch");
        let err = child.stderr.take().expect("stderr");
        let mut r = std::io::BufReader::new(err);
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            let n = std::io::BufRead::read_line(&mut r, &mut line).expect("read stderr");
            assert!(n > 0, "weir fs watch ended before it was ready:\n{seen}");
            seen.push_str(&line);
            if line.starts_with("weir: watching") || line.starts_with("weir: read ") {
                break;
            }
        }
        std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
        Watcher(child)
    }

    /// SIGTERM: the stop logs everything before it.
    fn stop(mut self) {
        let pid = rustix::process::Pid::from_child(&self.0);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("signal");
        let st = self.0.wait().expect("wait");
        assert!(st.success(), "weir fs watch exited with {st}");
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `weir --direct fs changes ROOT --since SINCE [--json]`'s output.
fn changes(state: &Path, root: &Path, since: u64, json: bool) -> String {
    let mut cmd = Command::new(WEIR);
    cmd.arg("--direct")
        .arg("--state-dir")
        .arg(state)
        .args(["fs", "changes"])
        .arg(root)
        .args(["--since", &since.to_string()]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run weir fs changes");
    assert!(
        out.status.success(),
        "weir fs changes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn answer(state: &Path, root: &Path, since: u64) -> Value {
    serde_json::from_str(&changes(state, root, since, true)).expect("one JSON object")
}

#[test]
fn changes_since_an_index_are_what_was_done() {
    support::run_in_private_ns("inner_changes_since_an_index_are_what_was_done");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_changes_since_an_index_are_what_was_done() {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(FsKind::Tmpfs, base.path()) else {
        return;
    };
    let state = base.mkdir("state");
    let root = s.root().to_path_buf();
    let w = Watcher::start(&state, &root);
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/a"), b"a").unwrap();
    std::fs::write(root.join("d/b"), b"b").unwrap();
    std::fs::write(root.join("keep"), b"k").unwrap();
    std::fs::write(root.join("gone"), b"g").unwrap();
    w.stop();
    // Before the watch: the caller must read the tree.
    let first = answer(&state, &root, 0);
    assert_eq!(first["fresh"], json!(true), "{first}");
    assert_eq!(first["why"], json!("the root's watch started after since"));
    let since = first["next"].as_u64().expect("next");

    let w = Watcher::start(&state, &root);
    std::fs::write(root.join("keep"), b"written").unwrap();
    std::fs::rename(root.join("d"), root.join("e")).unwrap();
    std::fs::remove_file(root.join("e/a")).unwrap();
    std::fs::write(root.join("e/c"), b"c").unwrap();
    std::fs::write(root.join("brief"), b"x").unwrap();
    std::fs::remove_file(root.join("brief")).unwrap();
    std::fs::rename(root.join("gone"), root.join("e/moved")).unwrap();
    w.stop();
    let got = answer(&state, &root, since);
    assert_eq!(got["fresh"], json!(false), "{got}");
    assert_eq!(got["why"], Value::Null);
    assert_eq!(got["created"], json!(["e/c"]), "{got}");
    assert_eq!(got["removed"], json!(["d/a"]), "{got}");
    assert_eq!(got["modified"], json!(["keep"]), "{got}");
    assert_eq!(
        got["renamed"],
        json!([{"from": "d", "to": "e"}, {"from": "gone", "to": "e/moved"}]),
        "{got}"
    );
    let next = got["next"].as_u64().expect("next");
    assert!(next > since);
    // The text form, and nothing more from `next` on.
    let text = changes(&state, &root, since, false);
    assert_eq!(
        text,
        format!("- d/a\n> d -> e\n> gone -> e/moved\n+ e/c\n~ keep\nnext {next} fresh no\n")
    );
    let after = answer(&state, &root, next);
    assert_eq!(
        (
            &after["created"],
            &after["removed"],
            &after["renamed"],
            &after["fresh"]
        ),
        (&json!([]), &json!([]), &json!([]), &json!(false)),
        "{after}"
    );
}
