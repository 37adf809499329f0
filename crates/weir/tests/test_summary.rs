//! `scripts/test-summary.awk`, which ends the README's test command with
//! one total: it sums every test binary's result line, names the failed
//! tests, and fails when a test failed or no test ran at all.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The summary of `output`, and whether it passed; `None` without awk.
fn summary(output: &str) -> Option<(String, bool)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-summary.awk");
    let mut child = match Command::new("awk")
        .arg("-f")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipping: awk is not installed");
            return None;
        }
        Err(e) => panic!("awk: {e}"),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(output.as_bytes())
        .expect("write to awk");
    let out = child.wait_with_output().expect("awk's output");
    Some((
        String::from_utf8(out.stdout).expect("UTF-8"),
        out.status.success(),
    ))
}

const OK_A: &str = "test result: ok. 12 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.31s";
const OK_B: &str =
    "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.02s";

#[test]
fn every_binary_is_counted_in_one_total() {
    let log = format!(
        "     Running unittests src/lib.rs\nrunning 14 tests\n{OK_A}\n\n     Running tests/x.rs\n{OK_B}\n"
    );
    let Some((text, ok)) = summary(&log) else {
        return;
    };
    assert!(ok, "{text}");
    assert_eq!(
        text,
        "total: 15 passed, 0 failed, 2 ignored, in 2 test binaries\n"
    );
}

#[test]
fn a_failed_test_is_named_and_fails_the_run() {
    let log = format!(
        "{OK_A}\ntest tail::follows ... ok\ntest tail::stops ... FAILED\n\
         test result: FAILED. 7 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 2.00s\n{OK_B}\n"
    );
    let Some((text, ok)) = summary(&log) else {
        return;
    };
    assert!(!ok, "{text}");
    assert_eq!(
        text,
        "failed: tail::stops\ntotal: 22 passed, 1 failed, 2 ignored, in 3 test binaries\n"
    );
}

#[test]
fn a_run_with_no_test_result_fails() {
    let Some((text, ok)) = summary("error[E0308]: mismatched types\nerror: could not compile\n")
    else {
        return;
    };
    assert!(!ok, "{text}");
    assert!(text.contains("in 0 test binaries"), "{text}");
}
