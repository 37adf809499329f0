//! weir on a terminal: what it prints when stdout is a pty, which no other
//! test sees (they read pipes). `script(1)` gives each command a pty and
//! copies what the pty shows to a pipe the test reads (the pty turns each
//! `\n` into `\r\n`).
//!
//! - `weir mounts` draws findmnt's tree on a terminal, and it is findmnt's
//!   own tree in the same pty (in a private mount namespace with nested
//!   tmpfs; needs root, unshare, mount and findmnt).
//! - `weir log tail -f` on a terminal shows a record written after it
//!   started, within a deadline.
//!
//! Each test prints `skipped: ...` when something it needs is missing.

#[allow(dead_code)]
#[path = "support/child_lines.rs"]
mod child_lines;
#[allow(dead_code)]
#[path = "support/privileged.rs"]
mod privileged;
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use child_lines::{Reap, lines_of, wait_line};
use privileged::{assert_ok, canonical_tempdir, in_private_ns, skip};
use support::Weir;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// Nested tmpfs under `$2`, then findmnt and `weir mounts` (no option) in
/// one pty wide enough that findmnt truncates nothing, each after a
/// marker line.
const MOUNTS_SCRIPT: &str = r#"
set -e
W=$1 BASE=$2
mount -t tmpfs -o size=1m top "$BASE"
mkdir "$BASE/a" "$BASE/b"
mount -t tmpfs mid "$BASE/a"
mkdir "$BASE/a/c"
mount -t tmpfs deep "$BASE/a/c"
mount -t tmpfs side "$BASE/b"
export W
script -qec 'stty cols 1000 rows 50; echo "== findmnt"; findmnt; echo "== weir"; "$W" --direct mounts' /dev/null
"#;

#[test]
fn mounts_draws_findmnts_tree_on_a_terminal() {
    if skip(&["unshare", "mount", "findmnt", "script", "stty"]) {
        return;
    }
    let (_keep, dir) = canonical_tempdir();
    let out = in_private_ns(MOUNTS_SCRIPT, &[WEIR, dir.to_str().unwrap()]);
    assert_ok("weir mounts and findmnt in a pty", &out);
    let shown = String::from_utf8(out.stdout)
        .expect("UTF-8 on the terminal")
        .replace("\r\n", "\n");
    let (findmnt, weir) = shown
        .split_once("== findmnt\n")
        .and_then(|(_, rest)| rest.split_once("== weir\n"))
        .unwrap_or_else(|| panic!("no markers in what the pty showed:\n{shown}"));
    assert_eq!(weir, findmnt, "weir's tree differs from findmnt's");
    let base = dir.to_str().unwrap();
    for want in [
        format!("─{base} "),
        // Siblings by their 32-bit ids, which the kernel reuses: /b may
        // come before /a; /a/c is an only child.
        format!("─{base}/a "),
        format!("─{base}/b "),
        format!("└─{base}/a/c "),
    ] {
        assert!(weir.contains(&want), "no {want:?} on the terminal:\n{weir}");
    }

    // The same command into a pipe prints the list, as it always did.
    let list = Command::new(WEIR)
        .args(["--direct", "mounts"])
        .output()
        .expect("run weir mounts");
    assert_ok("weir mounts into a pipe", &list);
    let list = String::from_utf8(list.stdout).unwrap();
    assert!(!list.contains('─') && !list.contains("|-"), "{list}");
}

/// `sh -c` quoting of one word.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn log_tail_follows_on_a_terminal() {
    if skip(&["script"]) {
        return;
    }
    let w = Weir::new();
    w.write(&[], &[b"before the tail"]);
    let state = w.state_dir().to_str().expect("a UTF-8 path");
    let command = format!(
        "tty; exec {} --state-dir {} --config /dev/null log tail -f",
        quoted(WEIR),
        quoted(state)
    );
    let mut child = Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .env("WEIR_SOCKET", w.socket())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run script");
    let lines = lines_of(child.stdout.take().expect("stdout"));
    let _reap = Reap(child);
    let mut seen = Vec::new();
    let patience = Duration::from_secs(20);
    // Its stdout is a terminal: what tty(1) says of the same stdin.
    wait_line(&lines, &mut seen, patience, "the terminal's name", |l| {
        l.starts_with("/dev/pts/")
    });
    wait_line(&lines, &mut seen, patience, "the first record", |l| {
        l.contains("before the tail")
    });
    w.write(&[], &[b"written while following"]);
    let second = wait_line(&lines, &mut seen, patience, "the new record", |l| {
        l.contains("written while following")
    });
    assert!(second.starts_with("2 "), "{second:?}");
}
