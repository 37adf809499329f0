//! The filesystem journal in the daemon: `weir run --fs-watch ROOT` on a
//! tmpfs, in a private mount namespace.
//!
//! Changes made in ROOT before a `weir sync` are all in the log after it;
//! `weir log tail --path SUB --json` through the daemon (which filters
//! server-side) gives exactly the records about SUB, the very bytes of the
//! CLI's own reader (`--direct`); `weir fs` lists the root, `weir status`
//! has the `fs` section and `/metrics` the `weir_fs_*` families. A change
//! made just before SIGTERM is in the log (the stop is a barrier), one
//! made while no daemon runs is logged `RECONCILED` by the next start,
//! and a root that cannot be watched fails the start with its reason.
//! `weir fs rescan ROOT` finds nothing the daemon missed and logs its
//! MARK; a path that is not a root is refused.
//! Without a daemon `weir fs` exits 3.
//!
//! Needs root and unshare; skipped (with a message) otherwise.

#[path = "support/child_lines.rs"]
mod child_lines;
#[path = "support/daemon_child.rs"]
#[allow(dead_code)]
mod daemon_child;

use std::path::Path;
use std::process::{Command, Stdio};

use daemon_child::{Daemon, Scratch, client, in_private_namespace, ok, on_path, sync, weir};
use serde_json::Value;
use weir_log::{LogRecord, Reader, RecordType};

/// The flags of a daemon that watches `root` and nothing else.
fn watching(root: &Path) -> Vec<String> {
    vec![
        "--mounts-enabled".into(),
        "false".into(),
        "--devices-enabled".into(),
        "false".into(),
        "--fs-watch".into(),
        root.to_str().expect("a UTF-8 test path").into(),
    ]
}

fn start(state: &Path, socket: &Path, root: &Path) -> Daemon {
    let flags = watching(root);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Daemon::start(state, socket, &flags)
}

/// Every record in the log, read from its files.
fn log_records(state: &Path) -> Vec<LogRecord> {
    Reader::open_dir(state.join("log"), 1)
        .collect::<Result<_, _>>()
        .expect("read the log")
}

/// Whether `r` is about `sub` or below, by its `path` or `spath`: the
/// rule written out here again, not weir-view's.
fn about(r: &LogRecord, sub: &[u8]) -> bool {
    r.fields.iter().any(|(k, v)| {
        (k == "path" || k == "spath")
            && v.strip_prefix(sub)
                .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    })
}

/// The JSON lines of `weir log tail ... --json`, parsed.
fn lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8(out.to_vec())
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect()
}

fn field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v["fields"][key].as_str()
}

#[test]
fn the_daemon_journals_a_watched_tree() {
    if !in_private_namespace("the_daemon_journals_a_watched_tree") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let state = dir.join("state");
    let socket = dir.join("weir.sock");
    let scratch = Scratch::mount(&dir.join("mnt"));
    // Empty when first watched: the log then describes the tree whole, so
    // a later start can replay it and log what changed meanwhile.
    let root = scratch.path().join("root");
    std::fs::create_dir(&root).unwrap();

    let daemon = start(&state, &socket, &root);
    let first = log_records(&state).last().map_or(1, |r| r.index + 1);
    for d in ["sub/old", "other", "subx"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("other/x"), b"x").unwrap();
    std::fs::write(root.join("sub/old/f"), b"f").unwrap();
    // Changes in and out of `sub`, and in its sibling `subx`, which a
    // prefix must not take for it.
    std::fs::create_dir(root.join("sub/d")).unwrap();
    std::fs::write(root.join("sub/d/f"), b"hello").unwrap();
    std::fs::write(root.join("subx/y"), b"y").unwrap();
    std::fs::rename(root.join("other/x"), root.join("sub/x")).unwrap();
    std::fs::rename(root.join("sub/old"), root.join("other/old")).unwrap();
    std::fs::remove_file(root.join("sub/d/f")).unwrap();
    std::fs::write(root.join("other/z"), b"z").unwrap();
    let index = sync(&socket);

    let logged: Vec<LogRecord> = log_records(&state)
        .into_iter()
        .filter(|r| r.index >= first && r.index <= index)
        .collect();
    let want: Vec<u64> = logged
        .iter()
        .filter(|r| about(r, b"sub"))
        .map(|r| r.index)
        .collect();
    let s = state.to_str().unwrap();
    let tail = |extra: &[&str]| {
        let mut args = vec!["--state-dir", s, "log", "tail", "--path", "sub", "--json"];
        args.extend_from_slice(extra);
        ok(weir(&socket, &args))
    };
    let from = first.to_string();
    let through_daemon = tail(&["--from", &from]);
    let got = lines(&through_daemon);
    let got_indexes: Vec<u64> = got.iter().map(|v| v["index"].as_u64().unwrap()).collect();
    let got_upto: Vec<u64> = got_indexes
        .iter()
        .copied()
        .filter(|&i| i <= index)
        .collect();
    assert_eq!(
        got_upto,
        want,
        "{}",
        String::from_utf8_lossy(&through_daemon)
    );
    // Each change about `sub` is there; nothing about `subx` or `other`.
    let has = |kind: &str, key: &str, path: &str| {
        got.iter()
            .any(|v| v["type"] == kind && field(v, key) == Some(path))
    };
    assert!(has("MKDIR", "path", "sub/d"), "{got:#?}");
    assert!(has("CREAT", "path", "sub/d/f"), "{got:#?}");
    assert!(has("UNLNK", "path", "sub/d/f"), "{got:#?}");
    assert!(has("RENME", "path", "sub/x"), "moved in: {got:#?}");
    assert!(has("RENME", "spath", "sub/old"), "moved out: {got:#?}");
    assert!(
        logged.iter().any(|r| r.field("path") == Some(b"subx/y")),
        "subx/y is logged"
    );
    assert!(
        !got.iter()
            .any(|v| field(v, "path").is_some_and(|p| p.starts_with("subx"))),
        "{got:#?}"
    );
    // The daemon's stream and the CLI's own reader print the same bytes.
    let direct = ok(weir(
        &socket,
        &[
            "--direct",
            "--state-dir",
            s,
            "log",
            "tail",
            "--path",
            "sub",
            "--json",
            "--from",
            &from,
        ],
    ));
    let direct_upto: Vec<&str> = std::str::from_utf8(&direct)
        .unwrap()
        .lines()
        .take(want.len())
        .collect();
    let daemon_upto: Vec<&str> = std::str::from_utf8(&through_daemon)
        .unwrap()
        .lines()
        .take(want.len())
        .collect();
    assert_eq!(daemon_upto, direct_upto);
    // A deeper prefix, in text: only what is under it.
    let text = ok(weir(
        &socket,
        &[
            "--state-dir",
            s,
            "log",
            "tail",
            "--path",
            "/sub/d/",
            "--from",
            &from,
        ],
    ));
    let text = String::from_utf8(text).unwrap();
    let kinds: Vec<&str> = text.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert!(
        kinds.first() == Some(&"MKDIR")
            && kinds.contains(&"CREAT")
            && kinds.last() == Some(&"UNLNK"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.contains(" path=sub/d")), "{text}");

    // `weir fs`: the root, with what it logged.
    let listed: Value = serde_json::from_slice(&ok(weir(&socket, &["fs", "--json"]))).unwrap();
    let roots = listed.as_array().expect("an array");
    assert_eq!(roots.len(), 1, "{listed}");
    assert_eq!(roots[0]["path"], root.to_str().unwrap());
    assert_eq!(roots[0]["fstype"], "tmpfs");
    assert_eq!(roots[0]["mark"], "filesystem");
    assert!(roots[0]["records"].as_u64().unwrap() > 0, "{listed}");
    let table = String::from_utf8(ok(weir(&socket, &["fs"]))).unwrap();
    let rows: Vec<&str> = table.lines().collect();
    assert!(rows[0].starts_with("PATH "), "{table}");
    assert!(rows[1].starts_with(root.to_str().unwrap()), "{table}");

    // `weir status`: the fs section, and a line per root.
    let st: Value = serde_json::from_slice(&ok(weir(&socket, &["status", "--json"]))).unwrap();
    let fs = &st["fs"];
    assert_eq!(fs["running"], true, "{st}");
    assert_eq!(fs["roots"][0]["path"], root.to_str().unwrap(), "{st}");
    assert!(fs["records"].as_u64().unwrap() > 0, "{st}");
    assert!(fs["syncs"].as_u64().unwrap() >= 1, "{st}");
    let summary = String::from_utf8(ok(weir(&socket, &["status"]))).unwrap();
    assert!(summary.contains("\nfs:         1 roots; "), "{summary}");
    assert!(
        summary.contains(&format!("\n  {}: tmpfs, filesystem mark; ", root.display())),
        "{summary}"
    );
    let mut metrics = Vec::new();
    client(&socket).get_text("/metrics", &mut metrics).unwrap();
    let metrics = String::from_utf8(metrics).unwrap();
    let sample = format!("weir_fs_root_records_total{{root=\"{}\"}} ", root.display());
    assert!(metrics.contains(&sample), "{metrics}");

    // `weir fs rescan`: nothing was missed, so nothing differs; the MARK
    // it logged is in the log at the index it gives, with its counts.
    let found: Value = serde_json::from_slice(&ok(weir(
        &socket,
        &["fs", "rescan", "--json", root.to_str().unwrap()],
    )))
    .unwrap();
    assert_eq!(found["root"], root.to_str().unwrap(), "{found}");
    assert_eq!(found["changes"], 0, "{found}");
    assert!(found["dirs_checked"].as_u64().unwrap() >= 4, "{found}");
    let at = found["index"].as_u64().expect("the MARK's index");
    let mark = log_records(&state)
        .into_iter()
        .find(|r| r.index == at)
        .expect("the MARK is in the log");
    assert_eq!(&mark.name[..], weir_fs::RESCANNED, "{found}");
    assert_eq!(
        mark.field("dirs_read").map(<[u8]>::to_vec),
        Some(found["dirs_read"].to_string().into_bytes())
    );
    let line =
        String::from_utf8(ok(weir(&socket, &["fs", "rescan", root.to_str().unwrap()]))).unwrap();
    assert!(
        line.starts_with(&format!("{}: 0 changes; ", root.display())),
        "{line}"
    );
    let sub = root.join("sub");
    let out = weir(&socket, &["fs", "rescan", sub.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a watched root"),
        "{out:?}"
    );
    let out = weir(
        &socket,
        &["--direct", "fs", "rescan", root.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(!out.status.success(), "{out:?}");

    // The stop logs what was made before it, without a sync.
    std::fs::write(root.join("sub/last"), b"l").unwrap();
    daemon.stop();
    assert!(
        log_records(&state)
            .iter()
            .any(|r| r.kind == RecordType::CREAT && r.field("path") == Some(b"sub/last")),
        "the change before SIGTERM is in the log"
    );
    // No daemon: `weir fs` says so, with `weir status`'s exit code.
    let out = weir(&socket, &["fs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no daemon answers"));

    // What changed while no daemon watched is logged at the next start,
    // flagged RECONCILED, and found by its path.
    std::fs::write(root.join("sub/while_down"), b"w").unwrap();
    let daemon = start(&state, &socket, &root);
    sync(&socket);
    let out = lines(&ok(weir(
        &socket,
        &[
            "--state-dir",
            s,
            "log",
            "tail",
            "--path",
            "sub/while_down",
            "--json",
        ],
    )));
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!(out[0]["type"], "CREAT");
    let flags: Vec<&str> = out[0]["flag_names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(flags.contains(&"RECONCILED"), "{out:#?}");
    daemon.stop();

    refused_starts(&dir, &scratch);
}

/// A root that cannot be watched fails `weir run` at its start, with the
/// tracker's reason: never a daemon that runs without the tree.
fn refused_starts(dir: &Path, scratch: &Scratch) {
    let run = |state: &Path, root: &Path, user: bool| {
        let mut c = if user {
            let mut c = Command::new("setpriv");
            c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_weir"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_weir"))
        };
        c.args(["run", "--config", "/dev/null", "--state-dir"])
            .arg(state)
            .arg("--socket")
            .arg(state.join("s.sock"))
            .args(watching(root))
            .env_remove("WEIR_SOCKET")
            .env_remove("NOTIFY_SOCKET")
            .stdin(Stdio::null());
        let out = c.output().expect("run weir");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&dir.join("s1"), Path::new("/proc"), false);
    assert!(
        err.contains("the filesystem tracker failed") && err.contains("cannot be watched"),
        "{err}"
    );
    let err = run(&dir.join("s2"), &scratch.path().join("missing"), false);
    assert!(err.contains("missing"), "{err}");
    if on_path("setpriv") {
        let open = scratch.path().join("open");
        std::fs::create_dir(&open).unwrap();
        let state = open.join("state");
        std::fs::create_dir(&state).unwrap();
        for p in [&open, &state] {
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777))
                .unwrap();
        }
        let err = run(&state, &open, true);
        assert!(err.contains("CAP_SYS_ADMIN"), "{err}");
    } else {
        eprintln!("setpriv is not installed: the unprivileged start is not tried");
    }
}
