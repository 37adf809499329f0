//! The CLI's daemon path against a fake daemon (`fake_daemon`): which
//! requests each command makes, that it prints the answers byte for byte,
//! which options keep it direct, and how it behaves with no daemon at all.
//! The real daemon is exercised in `daemon_cli.rs`.

mod fake_daemon;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use fake_daemon::{Answer, FakeDaemon};
use serde_json::{Value, json};

/// Runs `cmd` with `input` on stdin.
fn run(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn weir");
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().expect("wait for weir")
}

fn ok(cmd: Command, input: &[u8]) -> Vec<u8> {
    let out = run(cmd, input);
    assert!(
        out.status.success(),
        "weir failed with {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn requests(d: &FakeDaemon) -> Vec<String> {
    d.seen().into_iter().map(|s| s.request).collect()
}

#[test]
fn listings_are_the_daemons_bytes() {
    // Deliberately not what a direct reading would give, and not UTF-8.
    let mounts = b"[\n{\"id\":1,\"mount_point\":[47,255]}\n]\n";
    let table = b"ID MAJ:MIN\n1  0:1\n";
    let d = FakeDaemon::start(&[
        (
            "GET /v1/mounts",
            Answer::with("200 OK", "application/json", mounts),
        ),
        (
            "GET /v1/lvm/vgs",
            Answer::with("200 OK", "text/plain", table),
        ),
        (
            "GET /v1/lvm/pvs",
            Answer::with("200 OK", "application/json", b"[]\n"),
        ),
        (
            "GET /v1/devices",
            Answer::with("200 OK", "application/json", b"[\n]\n"),
        ),
    ]);
    assert_eq!(ok(d.weir(&["mounts", "--json"]), b""), mounts);
    assert_eq!(ok(d.weir(&["mounts", "-o", "id,maj:min"]), b""), mounts);
    let tree = ["mounts", "--tree", "-a", "-b", "-o", "target,use%"];
    assert_eq!(ok(d.weir(&tree), b""), mounts);
    assert_eq!(ok(d.weir(&["vgs"]), b""), table);
    assert_eq!(ok(d.weir(&["pvs", "--json"]), b""), b"[]\n");
    assert_eq!(ok(d.weir(&["devices", "--json"]), b""), b"[\n]\n");
    assert_eq!(
        requests(&d),
        [
            "GET /v1/mounts?format=json",
            "GET /v1/mounts?format=text&columns=id%2Cmaj%3Amin",
            "GET /v1/mounts?format=text&columns=target%2Cuse%25&tree=true&ascii=true&bytes=true",
            "GET /v1/lvm/vgs?format=text",
            "GET /v1/lvm/pvs?format=json",
            "GET /v1/devices?format=json",
        ]
    );
}

#[test]
fn direct_options_never_ask_the_daemon() {
    let d = FakeDaemon::start(&[]);
    for args in [
        &["--direct", "mounts", "--json"][..],
        &["mounts", "--backend", "mountinfo", "--json"],
        &["vgs", "--json", "--filter", "r|.*|"],
        &["devices", "--filter", "r|.*|"],
    ] {
        let out = run(d.weir(args), b"");
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    assert!(requests(&d).is_empty(), "{:?}", requests(&d));
}

#[test]
fn a_source_the_daemon_lacks_is_read_directly() {
    let d = FakeDaemon::start(&[(
        "GET /v1/mounts",
        Answer::error("503 Service Unavailable", "unavailable", "mounts are off"),
    )]);
    let out = ok(d.weir(&["mounts", "--json"]), b"");
    let direct: Value = serde_json::from_slice(&out).expect("a JSON array");
    assert!(
        direct.as_array().is_some_and(|a| !a.is_empty()),
        "read here: every system has a root mount"
    );
    assert_eq!(requests(&d), ["GET /v1/mounts?format=json"]);
}

#[test]
fn log_write_posts_its_lines_and_prints_the_indexes() {
    let d = FakeDaemon::start(&[("POST /v1/log/records", Answer::json(r#"{"indexes":[7,8]}"#))]);
    // One write, so one batch: the fake answers two indexes to any request.
    let out = ok(
        d.weir(&["log", "write", "--type", "creat"]),
        b"a\ncaf\xe9\n",
    );
    assert_eq!(out, b"7\n8\n");
    let out = ok(d.weir(&["log", "write", "--sync"]), b"x\ny\n");
    assert_eq!(out, b"7\n8\n");
    let bodies: Vec<Value> = d
        .seen()
        .iter()
        .map(|s| serde_json::from_slice(&s.body).unwrap())
        .collect();
    assert_eq!(
        bodies[0],
        json!({"durable": false, "records": [
            {"type": "CREAT", "name": "a", "fields": {}},
            {"type": "CREAT", "name": [99, 97, 102, 233], "fields": {}},
        ]})
    );
    assert_eq!(bodies[1]["durable"], true);
    assert_eq!(bodies[1]["records"][1]["type"], "MARK");
}

#[test]
fn api_errors_show_the_daemons_words_and_code() {
    let d = FakeDaemon::start(&[(
        "POST /v1/log/consumers",
        Answer::error(
            "409 Conflict",
            "consumer_exists",
            "consumer c1 already exists",
        ),
    )]);
    let out = run(d.weir(&["log", "consumer", "register", "c1"]), b"");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "registering consumer c1: consumer c1 already exists (HTTP 409, consumer_exists)"
        ),
        "{err}"
    );
    let body: Value = serde_json::from_slice(&d.seen()[0].body).unwrap();
    assert_eq!(body, json!({"name": "c1", "mask": "all"}));
}

#[test]
fn consumer_calls_name_the_consumer_in_the_path() {
    let c = json!({"id": 2, "name": "a.b", "mask": "all,-MARK", "cleared": 5, "lag": 1,
                   "idle_seconds": 2.5, "registered": 9});
    let list = json!([c]).to_string();
    let d = FakeDaemon::start(&[
        ("GET /v1/log/consumers", Answer::json(&list)),
        (
            "POST /v1/log/consumers/a.b/clear",
            Answer::json(&c.to_string()),
        ),
        (
            "DELETE /v1/log/consumers/a.b",
            Answer::with("204 No Content", "text/plain", b""),
        ),
    ]);
    let json_list = ok(d.weir(&["log", "consumer", "list", "--json"]), b"");
    assert_eq!(String::from_utf8(json_list).unwrap(), format!("{c}\n"));
    let table = String::from_utf8(ok(d.weir(&["log", "consumer", "list"]), b"")).unwrap();
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row, ["2", "a.b", "5", "1", "2", "all,-MARK"]);
    assert!(ok(d.weir(&["log", "consumer", "clear", "a.b", "0"]), b"").is_empty());
    assert!(ok(d.weir(&["log", "consumer", "deregister", "a.b"]), b"").is_empty());
    let seen = d.seen();
    assert_eq!(seen[2].request, "POST /v1/log/consumers/a.b/clear");
    assert_eq!(
        serde_json::from_slice::<Value>(&seen[2].body).unwrap(),
        json!({"index": 0})
    );
    assert_eq!(seen[3].request, "DELETE /v1/log/consumers/a.b");
}

#[test]
fn tail_follow_prints_whole_lines_and_fails_when_the_daemon_goes() {
    let d = FakeDaemon::start(&[(
        "GET /v1/log/records",
        Answer::chunked(
            "application/x-ndjson",
            &[b"{\"index\":1}\n{\"in", b"dex\":2}\n"],
        ),
    )]);
    let out = run(
        d.weir(&[
            "log",
            "tail",
            "-f",
            "--json",
            "--from",
            "1",
            "--mask",
            "all,-MARK",
        ]),
        b"",
    );
    assert_eq!(out.stdout, b"{\"index\":1}\n{\"index\":2}\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the daemon ended the stream"), "{err}");
    assert_eq!(
        requests(&d),
        // The mask as weir-log writes it: everything but MARK.
        ["GET /v1/log/records?format=json&from=1&mask=all%2C-MARK&follow=true"]
    );
}

#[test]
fn sync_and_status_print_the_daemons_answers() {
    let status = json!({"version": "9.9.9", "pid": 77, "uptime_seconds": 3725,
                        "state_dir": "/nowhere", "socket": "/s", "mounts": null,
                        "devices": null, "log": {"consumers": 0}});
    let d = FakeDaemon::start(&[
        ("POST /v1/sync", Answer::json(r#"{"index":42}"#)),
        ("GET /v1/status", Answer::json(&status.to_string())),
    ]);
    assert_eq!(ok(d.weir(&["sync"]), b""), b"42\n");
    assert_eq!(ok(d.weir(&["sync", "--json"]), b""), b"{\"index\":42}\n");
    let j: Value = serde_json::from_slice(&ok(d.weir(&["status", "--json"]), b"")).unwrap();
    assert_eq!(j, status);
    let text = String::from_utf8(ok(d.weir(&["status"]), b"")).unwrap();
    assert!(
        text.starts_with("weir 9.9.9, pid 77, up 1h 2m 5s\n"),
        "{text}"
    );
    assert!(text.contains("\nmounts:     off\n"), "{text}");
}

#[test]
fn without_a_daemon_status_exits_3_and_sync_fails() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.sock");
    let weir = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
        c.arg("--socket").arg(&none).args(args);
        run(c, b"")
    };
    let out = weir(&["status"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        format!("weir: no daemon answers on {}\n", none.display())
    );
    let out = weir(&["sync"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no daemon is running"));
    // The listings just work here.
    let out = weir(&["mounts", "--json"]);
    assert!(out.status.success(), "{out:?}");
    // $WEIR_SOCKET stands in for --socket.
    let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
    c.env("WEIR_SOCKET", &none).arg("status");
    assert_eq!(run(c, b"").status.code(), Some(3));
}

#[test]
fn log_commands_for_another_state_dir_work_directly() {
    let state = tempfile::tempdir().unwrap();
    let st = state.path().to_str().unwrap();
    // Make a log here, directly.
    let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
    c.args([
        "--direct",
        "--config",
        "/dev/null",
        "--state-dir",
        st,
        "log",
        "write",
    ]);
    assert_eq!(ok(c, b"one\n"), b"1\n");

    let elsewhere = json!({"state_dir": "/nonexistent/weir"}).to_string();
    let d = FakeDaemon::start(&[
        ("GET /v1/status", Answer::json(&elsewhere)),
        (
            "GET /v1/log/stats",
            Answer::json(r#"{"from":"the daemon"}"#),
        ),
    ]);
    let out = ok(d.weir(&["--state-dir", st, "log", "stats", "--json"]), b"");
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["last_index"], 1, "read here: {v}");
    // Only the writer knows whether the log is poisoned.
    assert_eq!(v.get("poisoned"), Some(&Value::Null), "{v}");
    assert_eq!(requests(&d), ["GET /v1/status"]);

    let same = json!({"state_dir": st}).to_string();
    let d = FakeDaemon::start(&[
        ("GET /v1/status", Answer::json(&same)),
        (
            "GET /v1/log/stats",
            Answer::json(r#"{"from":"the daemon"}"#),
        ),
    ]);
    let out = ok(d.weir(&["--state-dir", st, "log", "stats", "--json"]), b"");
    assert_eq!(out, b"{\"from\":\"the daemon\"}\n");
    // Without --state-dir the daemon's log is the one meant: no question.
    let out = ok(d.weir(&["log", "stats", "--json"]), b"");
    assert_eq!(out, b"{\"from\":\"the daemon\"}\n");
    assert_eq!(
        requests(&d),
        ["GET /v1/status", "GET /v1/log/stats", "GET /v1/log/stats"]
    );
}

/// Guards the gap where `weir log stats` showed a poisoned log as a
/// healthy one that merely refused writes.
#[test]
fn log_stats_says_when_the_daemons_log_is_poisoned() {
    let stats = |poisoned: bool| {
        json!({"dir": "/l", "segments": 1, "bytes": 8, "allocated_bytes": 8,
               "spare_bytes": 0, "first_index": 1, "last_index": 3, "records": 3,
               "consumers": [], "poisoned": poisoned})
        .to_string()
    };
    let d = FakeDaemon::start(&[("GET /v1/log/stats", Answer::json(&stats(true)))]);
    let out = String::from_utf8(ok(d.weir(&["log", "stats"]), b"")).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "log:          /l", "{out}");
    assert!(lines[1].starts_with("state:        POISONED"), "{out}");
    let d = FakeDaemon::start(&[("GET /v1/log/stats", Answer::json(&stats(false)))]);
    let out = String::from_utf8(ok(d.weir(&["log", "stats"]), b"")).unwrap();
    assert!(
        !out.contains("POISONED") && out.contains("records:      3"),
        "{out}"
    );
}
