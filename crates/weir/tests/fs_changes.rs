//! `weir fs changes PATH --since INDEX`: changes made in a tree a real
//! `weir fs watch` logs come back, coalesced, from the log read directly
//! (`--direct`); an index before the watch started is `fresh`, and so is
//! one whose records retention removed, while an index after them is
//! answered although the MARK that started the watch is gone. Runs in a
//! private mount namespace on tmpfs; needs root and unshare, skipped
//! (with a message) otherwise.

#[path = "support/fs_watcher.rs"]
mod fs_watcher;
#[path = "../../fs/tests/support/mod.rs"]
mod support;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use fs_watcher::Watcher;
use serde_json::{Value, json};
use support::scratch::{FsKind, scratch};

support::workload_child_test!();

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// `weir --direct --state-dir STATE ARGS...`'s output; it must succeed.
fn direct(state: &Path, args: &[&OsStr]) -> String {
    let out = Command::new(WEIR)
        .arg("--direct")
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .output()
        .expect("run weir");
    assert!(
        out.status.success(),
        "weir {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// `weir --direct fs changes ROOT --since SINCE [--json]`'s output.
fn changes(state: &Path, root: &Path, since: u64, json: bool) -> String {
    let since = since.to_string();
    let mut args: Vec<&OsStr> = vec!["fs".as_ref(), "changes".as_ref(), root.as_os_str()];
    args.extend(["--since".as_ref(), OsStr::new(&since)]);
    if json {
        args.push("--json".as_ref());
    }
    direct(state, &args)
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

/// `weir --direct log stats --json`'s `first_index`.
fn first_index(state: &Path) -> u64 {
    let out = direct(state, &["log", "stats", "--json"].map(OsStr::new));
    let v: Value = serde_json::from_str(&out).expect("JSON");
    v["first_index"].as_u64().expect("first_index")
}

#[test]
fn retention_leaves_the_root_answerable() {
    support::run_in_private_ns("inner_retention_leaves_the_root_answerable");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_retention_leaves_the_root_answerable() {
    let Some(base) = support::private_base() else {
        return;
    };
    let Some(s) = scratch(FsKind::Tmpfs, base.path()) else {
        return;
    };
    let state = base.mkdir("state");
    let root = s.root().to_path_buf();
    // Segments of 1 MiB and no floor: what every consumer cleared goes.
    let config = base.path().join("weir.toml");
    std::fs::write(&config, "[log]\nsegment_mib = 1\nkeep_mib = 0\n").unwrap();
    let pre = [OsStr::new("--config"), config.as_os_str()];
    let w = Watcher::start_with(&state, &root, &pre, true);
    // Enough records that the watch is marked again and its first MARK's
    // segments are cleared by the copy's consumer; the copy commits every
    // few seconds, so go on until retention has taken them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut batch = 0;
    while first_index(&state) <= 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "retention took nothing after {batch} batches"
        );
        let d = root.join(format!("b{batch}"));
        std::fs::create_dir(&d).unwrap();
        for i in 0..5000 {
            std::fs::write(d.join(i.to_string()), b"").unwrap();
        }
        batch += 1;
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let first = first_index(&state);
    let got = answer(&state, &root, 0);
    assert_eq!(got["fresh"], json!(true), "{got}");
    assert_eq!(
        got["why"],
        json!(format!(
            "retention removed records after since: the log starts at {first}"
        ))
    );
    // From the first index kept: no record of the watch's start is left,
    // yet the root is found by its later MARK.
    std::fs::write(root.join("late"), b"x").unwrap();
    std::fs::remove_dir_all(root.join("b0")).unwrap();
    w.stop();
    let since = first_index(&state);
    let tail = direct(&state, &["log", "tail", "--json"].map(OsStr::new));
    assert!(
        !tail.contains("fs root watched"),
        "the first MARK is still in the log"
    );
    assert!(
        tail.contains("fs root watching"),
        "no MARK of the watch is left"
    );
    let got = answer(&state, &root, since);
    assert_eq!(got["fresh"], json!(false), "{got}");
    let created = got["created"].as_array().expect("created");
    assert!(created.contains(&json!("late")), "{got}");
    assert!(
        got["removed"].as_array().unwrap().contains(&json!("b0")),
        "{got}"
    );
}
