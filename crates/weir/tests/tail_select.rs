//! `weir log tail` with journalctl's choices (`-n`, `-e`, `--since`,
//! `--until`, matches), read directly and through a real `weir run`: the
//! two must print the same bytes.
//!
//! The records are written with weir-log before the daemon starts, with
//! the fields real sources write. Times are the log's own: the windows
//! are given as `@EPOCH.NS` of records read back, so nothing depends on
//! how fast the test runs. The daemon's trackers are off; it adds its own
//! MARK records, which the cases leave out with `--type` or matches.

#[path = "support/child_lines.rs"]
mod child_lines;
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use child_lines::{Reap, lines_of, wait_line};
use daemon_child::{Daemon, PATIENCE, ok, weir};
use serde_json::Value;
use weir_log::{Field, Log, Options, Record, RecordType};

const FLAGS: [&str; 4] = ["--mounts-enabled", "false", "--devices-enabled", "false"];

/// The records of the test, in order (indexes 1-6).
fn write_records(state: &Path) {
    let log = Log::open(state.join("log"), Options::default()).expect("open the log");
    let f = |key, value: &'static str| Field {
        key,
        value: value.as_bytes(),
    };
    let records: [(RecordType, &str, Vec<Field<'_>>); 6] = [
        (
            RecordType::PV_FOUND,
            "sda1",
            vec![f("dev", "8:1"), f("vg", "vg0")],
        ),
        (
            RecordType::PV_FOUND,
            "sdb1",
            vec![f("dev", "8:17"), f("vg", "vg1")],
        ),
        (
            RecordType::MOUNT_ATTACH,
            "/mnt/x",
            vec![f("fstype", "ext4"), f("dev", "8:1")],
        ),
        (
            RecordType::MOUNT_ATTACH,
            "/mnt/y",
            vec![f("fstype", "xfs"), f("dev", "8:17")],
        ),
        (RecordType::DEVICE_REMOVE, "sda1", vec![f("dev", "8:1")]),
        (
            RecordType::PV_LOST,
            "sdb1",
            vec![f("dev", "8:17"), f("vg", "vg1")],
        ),
    ];
    for (kind, name, fields) in &records {
        let _ = log
            .append(&Record::new(*kind).name(name.as_bytes()).fields(fields))
            .expect("append");
        // Distinct times, so that a window can fall between two records.
        std::thread::sleep(Duration::from_millis(2));
    }
    log.close().expect("close the log");
}

/// `weir log tail ARGS` read directly.
fn direct(state: &Path, args: &[&str]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
    c.env_remove("WEIR_SOCKET")
        .args(["--direct", "--config", "/dev/null", "--state-dir"])
        .arg(state)
        .args(["log", "tail"])
        .args(args)
        .stdin(Stdio::null());
    String::from_utf8(ok(c)).unwrap()
}

/// `weir log tail ARGS` through the daemon, which must print what the
/// direct read prints.
fn both(state: &Path, socket: &Path, args: &[&str]) -> String {
    let mut full = vec!["log", "tail"];
    full.extend_from_slice(args);
    let via = String::from_utf8(ok(weir(socket, &full))).unwrap();
    assert_eq!(
        via,
        direct(state, args),
        "{args:?}: daemon and direct differ"
    );
    via
}

/// The indexes of text lines.
fn indexes(out: &str) -> Vec<u64> {
    out.lines()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// A record's time as `@SECONDS.NANOSECONDS`.
fn at(r: &Value) -> String {
    let t = r["time"].as_u64().unwrap();
    format!("@{}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
}

#[test]
fn journalctl_choices_print_the_same_directly_and_through_the_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let (state, socket) = (dir.join("state"), dir.join("weir.sock"));
    write_records(&state);
    let d = Daemon::start(&state, &socket, &FLAGS);
    let ours = ["--type", "-MARK"];

    // -n: the last N of what matches; -e: the last 1000, so all here.
    let with = |extra: &[&str]| -> Vec<u64> {
        let mut a = ours.to_vec();
        a.extend_from_slice(extra);
        indexes(&both(&state, &socket, &a))
    };
    assert_eq!(with(&["-n", "2"]), [5, 6]);
    assert_eq!(with(&["--lines", "0"]), Vec::<u64>::new());
    assert_eq!(with(&["-e"]), [1, 2, 3, 4, 5, 6]);
    let pv = both(&state, &socket, &["-n", "1", "--type", "PV_FOUND"]);
    assert_eq!(indexes(&pv), [2]);

    // Matches: the same field ORs, different fields AND.
    assert_eq!(with(&["vg=vg0"]), [1]);
    assert_eq!(with(&["vg=vg0", "vg=vg1"]), [1, 2, 6]);
    assert_eq!(with(&["dev=8:17", "fstype=xfs"]), [4]);
    assert_eq!(with(&["fstype=ext4", "fstype=xfs", "-n", "1"]), [4]);
    // A mount point: MOUNT_* records that name it.
    assert_eq!(with(&["/mnt/x"]), [3]);
    assert_eq!(with(&["--mount", "/mnt/y/"]), [4]);
    // A device: DEVICE_* and PV_* records by name or number, not mounts.
    assert_eq!(with(&["--device", "sda1"]), [1, 5]);
    assert_eq!(with(&["--device", "8:17"]), [2, 6]);
    assert_eq!(with(&["/dev/weir-test-no-such-dev"]), Vec::<u64>::new());
    assert_eq!(
        with(&["--device", "sda1", "--device", "sdb1", "vg=vg1"]),
        [2, 6]
    );

    // A window by the records' own times, bounds included.
    let recs: Vec<Value> = both(&state, &socket, &["--json", "--type", "-MARK"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 6);
    let (t2, t4) = (at(&recs[1]), at(&recs[3]));
    assert_eq!(with(&["--since", &t2, "--until", &t4]), [2, 3, 4]);
    assert_eq!(with(&["-S", &t4, "-n", "1"]), [6]);
    assert_eq!(with(&["-U", &t2, "vg=vg1"]), [2]);
    // Relative to now: everything was written within the hour.
    assert_eq!(with(&["--since", "-1h"]), [1, 2, 3, 4, 5, 6]);
    assert_eq!(with(&["--until", "-1h"]), Vec::<u64>::new());
    assert_eq!(with(&["--since", "yesterday", "--until", "+1h"]).len(), 6);

    // The daemon keeps to the window itself: its own answer holds only
    // the records inside, MARKs included.
    let ns = |r: &Value| r["time"].as_u64().unwrap();
    let mut c = daemon_child::client(&socket);
    let mut body = Vec::new();
    c.get_text(
        &format!(
            "/v1/log/records?since_ns={}&until_ns={}",
            ns(&recs[1]),
            ns(&recs[3])
        ),
        &mut body,
    )
    .unwrap();
    let served: Vec<Value> = String::from_utf8(body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!served.is_empty());
    assert!(
        served
            .iter()
            .all(|r| (ns(&recs[1])..=ns(&recs[3])).contains(&ns(r))),
        "{served:?}"
    );
    let served_ours: Vec<u64> = served
        .iter()
        .filter(|r| r["type"] != "MARK")
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(served_ours, [2, 3, 4]);

    d.stop();
}

/// Dates and clock times are the local time of `TZ` unless they say UTC:
/// in a zone three hours east of UTC, a record's UTC clock time read as
/// local time is three hours later than the record.
#[test]
fn dates_are_local_time_unless_utc() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    write_records(&state);
    let last: Value = serde_json::from_str(direct(&state, &["--json", "-n", "1"]).trim()).unwrap();
    let t = jiff::Timestamp::from_nanosecond(i128::from(last["time"].as_u64().unwrap())).unwrap();
    // The second the last record was written in, as clock times.
    let civil = |tz: jiff::tz::TimeZone| t.to_zoned(tz).strftime("%Y-%m-%d %H:%M:%S").to_string();
    let utc = civil(jiff::tz::TimeZone::UTC);
    let east = civil(jiff::tz::TimeZone::fixed(jiff::tz::offset(3)));
    let tail = |tz: &str, since: &str| -> usize {
        let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
        c.env_remove("WEIR_SOCKET")
            .env("TZ", tz)
            .args(["--direct", "--config", "/dev/null", "--state-dir"])
            .arg(&state)
            .args(["log", "tail", "-n", "1", "--since", since])
            .stdin(Stdio::null());
        String::from_utf8(ok(c)).unwrap().lines().count()
    };
    // POSIX TZ: `<+03>-3` is three hours east.
    assert_eq!(tail("<+03>-3", &east), 1);
    assert_eq!(tail("<+03>-3", &utc), 1, "three hours earlier");
    assert_eq!(tail("UTC0", &east), 0, "three hours later");
    assert_eq!(tail("<+03>-3", &format!("{utc} UTC")), 1);
    assert_eq!(tail("<+03>-3", &format!("{east} UTC")), 0);
}

#[test]
fn bad_times_and_matches_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    write_records(&state);
    for (args, says) in [
        (&["--since", "soon"][..], "bad time \"soon\""),
        (
            &["--until", "-3fortnights"][..],
            "unknown time unit \"fortnights\"",
        ),
        (&["sda1"][..], "expected KEY=VALUE"),
        (&["a b=c"][..], "bad field name"),
        (
            &["--since", "-1h", "--until", "-2h"][..],
            "--since must be before --until",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_weir"))
            .env_remove("WEIR_SOCKET")
            .args(["--direct", "--config", "/dev/null", "--state-dir"])
            .arg(&state)
            .args(["log", "tail"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

/// `-n 1 -f`: the last record of the backlog, then what comes; through the
/// daemon as directly.
#[test]
fn the_last_n_then_follow() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let (state, socket) = (dir.join("state"), dir.join("weir.sock"));
    write_records(&state);
    let d = Daemon::start(&state, &socket, &FLAGS);
    let args = ["log", "tail", "-n", "1", "-f", "vg=vg1"];
    let mut via = weir(&socket, &args);
    let mut own = Command::new(env!("CARGO_BIN_EXE_weir"));
    own.env_remove("WEIR_SOCKET")
        .args(["--direct", "--config", "/dev/null", "--state-dir"])
        .arg(&state)
        .args(args)
        .stdin(Stdio::null());
    let mut readers = Vec::new();
    for cmd in [&mut via, &mut own] {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = lines_of(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        let first = wait_line(&lines, &mut seen, PATIENCE, "the backlog's last", |_| true);
        assert!(first.starts_with("6 PV_LOST "), "{first}");
        readers.push((Reap(child), lines, seen));
    }
    // Through the daemon: a new record that matches, and one that does not.
    let mut c = daemon_child::client(&socket);
    let body = serde_json::json!({
        "records": [
            { "type": "PV_FOUND", "name": "sdc1", "fields": { "vg": "vg9" } },
            { "type": "PV_FOUND", "name": "sdb1", "fields": { "vg": "vg1" } }
        ]
    });
    let _: Value = c
        .post_json("/v1/log/records", &body)
        .expect("append through the daemon");
    for (mut child, lines, mut seen) in readers {
        let next = wait_line(&lines, &mut seen, PATIENCE, "the new record", |_| true);
        assert!(
            next.contains(" PV_FOUND ") && next.contains(" sdb1 "),
            "{next}"
        );
        let _ = child.0.kill();
        let _ = child.0.wait();
        assert_eq!(seen.len(), 2, "{seen:?}");
    }
    d.stop();
}
