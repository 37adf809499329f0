//! The history `weir log tail` shows survives what consumers clear: a
//! user's report, against a real `weir run`. A consumer registered for
//! mount events on a log of device events is moved past every record,
//! which clears them all; with Lustre's clear-then-purge a restart then
//! left `weir log tail --from 1` answering that index 1 was
//! garbage-collected. The daemon's default floor keeps that history;
//! `--log-keep-mib 0` is the old behaviour, run first as the control that
//! shows the test can fail.
//!
//! The trackers are off, so the daemon mounts nothing and writes only the
//! records the test gives it and its own MARKs. Each daemon is stopped
//! with SIGTERM: its log's close runs a retention pass before it exits, so
//! what retention deletes is gone by then, without waiting on its timing.

#[path = "support/child_lines.rs"]
mod child_lines;
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use daemon_child::{Daemon, ok, sync, weir};
use serde_json::Value;

/// One-MiB segments, so that a few MiB of records seal several.
const FLAGS: [&str; 6] = [
    "--mounts-enabled",
    "false",
    "--devices-enabled",
    "false",
    "--log-segment-mib",
    "1",
];

/// `weir ARGS...` through the daemon with `input` on its stdin.
fn with_input(socket: &Path, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut cmd = weir(socket, args);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run weir");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn run(socket: &Path, args: &[&str]) -> Output {
    weir(socket, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run weir")
}

/// As in the report: device records, then a consumer for mount events
/// only, then a restart. About 3.5 MiB of PV_FOUND records and a
/// VG_COMPLETE. Returns the daemon, restarted, and the index of the
/// VG_COMPLETE record.
fn the_report(state: &Path, socket: &Path, floor: &[&str]) -> (Daemon, u64) {
    let flags: Vec<&str> = FLAGS.iter().chain(floor).copied().collect();
    let d = Daemon::start(state, socket, &flags);
    let line = format!("/dev/loop{}\n", "7".repeat(900));
    let pvs = line.repeat(4000);
    with_input(
        socket,
        &["log", "write", "--type", "PV_FOUND"],
        pvs.as_bytes(),
    );
    let written = with_input(
        socket,
        &["log", "write", "--type", "VG_COMPLETE", "--sync"],
        b"vg0\n",
    );
    let vg: u64 = String::from_utf8(written).unwrap().trim().parse().unwrap();
    ok(weir(
        socket,
        &[
            "log",
            "consumer",
            "register",
            "indexer",
            "--mask",
            "MOUNT_ATTACH,MOUNT_DETACH",
        ],
    ));
    sync(socket);
    d.stop();
    (Daemon::start(state, socket, &flags), vg)
}

#[test]
fn a_masked_consumer_and_a_restart_leave_the_history_readable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let socket = dir.join("weir.sock");

    // The control: without a floor, the history is gone, as reported.
    let state = dir.join("purged");
    let (d, _) = the_report(&state, &socket, &["--log-keep-mib", "0"]);
    let out = run(&socket, &["log", "tail", "--from", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("garbage-collected"),
        "{}: {err}",
        out.status
    );
    d.stop();

    // The daemon's defaults: every record is still there from index 1.
    let state = dir.join("kept");
    let (d, vg) = the_report(&state, &socket, &[]);
    let tail = ok(weir(&socket, &["log", "tail", "--from", "1", "--json"]));
    let records: Vec<Value> = String::from_utf8(tail)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let indexes: Vec<u64> = records
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    let last = *indexes.last().unwrap();
    assert_eq!(indexes, (1..=last).collect::<Vec<_>>());
    let pvs = records.iter().filter(|r| r["type"] == "PV_FOUND").count();
    assert_eq!(pvs, 4000);
    assert_eq!(records[vg as usize - 1]["type"], "VG_COMPLETE");

    // And the consumer had cleared them all: the floor, not the consumer,
    // kept them.
    let list = ok(weir(&socket, &["log", "consumer", "list", "--json"]));
    // One consumer: one line.
    let indexer: Value = serde_json::from_slice(&list).unwrap();
    assert_eq!(indexer["name"], "indexer");
    assert!(indexer["cleared"].as_u64().unwrap() >= vg, "{indexer}");

    // `weir log stats` shows the floor, from the daemon and without it.
    let stats = ok(weir(&socket, &["log", "stats", "--json"]));
    let stats: Value = serde_json::from_slice(&stats).unwrap();
    let floor = serde_json::json!({"keep_age_secs": 604_800, "keep_bytes": 268_435_456,
                                   "max_age_secs": null, "max_bytes": 4_294_967_296_u64});
    assert_eq!(stats["retention"], floor, "{stats}");
    assert_eq!(stats["first_index"], 1);
    let text = String::from_utf8(ok(weir(&socket, &["log", "stats"]))).unwrap();
    assert!(
        text.contains("\nfloor:        the newest 268435456 bytes, up to 604800 s old,"),
        "{text}"
    );
    d.stop();
    let mut direct = weir(
        &socket,
        &["--direct", "--config", "/dev/null", "--state-dir"],
    );
    direct.arg(&state).args(["log", "stats", "--json"]);
    let stats: Value = serde_json::from_slice(&ok(direct)).unwrap();
    assert_eq!(stats["retention"], floor, "{stats}");
}
