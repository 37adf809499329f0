//! Commands that open the log themselves (no daemon answers, or
//! `--direct`) take the daemon's `[log]` settings from its configuration
//! file (`--config`), so that the retention they run evicts and deletes
//! what the daemon's would. No test here reads /etc/weir: every command
//! gets a temporary file, or /dev/null (see `support::Weir::cmd`).

mod support;

use serde_json::Value;
use support::Weir;

fn consumer_names(w: &Weir) -> Vec<String> {
    w.ok(&["log", "consumer", "list", "--json"], b"")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// Regression: direct opens used weir-log's defaults whatever the daemon's
/// file said, so one `echo note | weir log write` with the daemon stopped
/// evicted and deleted by other rules than the daemon's. weir-log's
/// defaults never evict by record count; this file evicts a consumer more
/// than 2 records behind.
#[test]
fn a_direct_write_runs_retention_with_the_configured_settings() {
    for configured in [false, true] {
        let mut w = Weir::new();
        w.write(&[], &[b"before"]);
        w.ok(&["log", "consumer", "register", "slow"], b"");
        if configured {
            w.set_config("[log]\nmax_idle_records = 2\n");
        }
        w.write(&[], &[b"a", b"b", b"c"]);
        let evicted = w
            .tail_json(&[])
            .iter()
            .any(|r| r["name"] == "consumer-evicted slow");
        if configured {
            assert!(consumer_names(&w).is_empty(), "the file's limit applies");
            assert!(evicted, "a MARK says so");
        } else {
            assert_eq!(consumer_names(&w), ["slow"], "the defaults keep it");
            assert!(!evicted);
        }
    }
}

/// The global option may follow the subcommand, and `consumer clear` (a
/// direct writer too) honours it.
#[test]
fn config_after_the_subcommand_applies_to_consumer_changes() {
    let w = Weir::new();
    w.write(&[], &[b"one", b"two", b"three", b"four"]);
    w.ok(&["log", "consumer", "register", "slow"], b"");
    w.ok(&["log", "consumer", "register", "busy"], b"");
    w.write(&[], &[b"five", b"six", b"seven"]);
    let file = w.state_dir().join("evicting.toml");
    std::fs::write(&file, "[log]\nmax_idle_records = 1\n").unwrap();
    let file = file.to_str().unwrap();
    w.ok(
        &["log", "consumer", "clear", "busy", "0", "--config", file],
        b"",
    );
    assert_eq!(consumer_names(&w), ["busy"]);
}

/// A file that exists but that the daemon would refuse is an error, not
/// the defaults; and nothing is created.
#[test]
fn an_invalid_configuration_is_an_error() {
    for (toml, says) in [
        ("[log]\nmax_idle_secs = \"never\"\n", "log.max_idle_secs"),
        ("[log]\nring_slots = 3\n", "log.ring_slots"),
        ("[log]\nmax_idel_secs = 0\n", "log.max_idel_secs"),
        ("[log\n", "TOML"),
    ] {
        let mut w = Weir::new();
        let path = w.set_config(toml);
        for args in [&["log", "write"][..], &["log", "consumer", "register", "c"]] {
            let out = w.run(args, b"x\n");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?} {toml:?}: {err}");
            assert!(err.contains(says), "{toml:?}: {err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
            assert!(out.stdout.is_empty());
        }
        assert!(!w.log_dir().exists(), "{toml:?}");
    }
    // A file named but missing is an error too, as for `weir run --config`.
    let w = Weir::new();
    let missing = w.state_dir().join("missing.toml");
    let out = w.run(
        &["log", "write", "--config", missing.to_str().unwrap()],
        b"x\n",
    );
    assert_eq!(out.status.code(), Some(1));
}

/// `log stats` without a daemon shows the retention a direct writer
/// would apply: the file's, else the daemon's defaults (a floor of a
/// week and 256 MiB). A file it cannot use leaves the retention unknown
/// with a warning; the command, which only reads, still answers.
#[test]
fn stats_show_the_configured_retention() {
    let retention = |w: &Weir| -> (Value, String) {
        let out = w.run(&["log", "stats", "--json"], b"");
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        (v["retention"].clone(), err)
    };
    let mut w = Weir::new();
    w.write(&[], &[b"one"]);
    let (r, _) = retention(&w);
    assert_eq!(
        r,
        serde_json::json!({"keep_age_secs": 604_800, "keep_bytes": 268_435_456,
                           "max_age_secs": null, "max_bytes": 4_294_967_296_u64})
    );
    w.set_config("[log]\nkeep_mib = 0\nmax_mib = 64\n");
    let (r, _) = retention(&w);
    assert_eq!(
        (&r["keep_bytes"], &r["max_bytes"]),
        (&0.into(), &(64u64 << 20).into())
    );
    let text = w.ok(&["log", "stats"], b"");
    assert!(
        text.contains("\nsize limit:   67108864 bytes\nfloor:        none "),
        "{text}"
    );
    w.set_config("[log]\nring_slots = 3\n");
    let (r, err) = retention(&w);
    assert_eq!(r, Value::Null);
    assert!(
        err.contains("warning: retention unknown") && err.contains("log.ring_slots"),
        "{err}"
    );
    let text = w.ok(&["log", "stats"], b"");
    assert!(
        text.contains("records:") && !text.contains("floor:"),
        "{text}"
    );
}

/// Regression: `log tail --from` looked for an index past the end for a
/// fixed 300 ms, so the next index of a direct writer whose `[log]
/// flush_ms` is longer was refused although `weir log write` had already
/// printed the one before it. The wait now covers two flush intervals of
/// the configured writer.
#[test]
fn from_waits_for_the_configured_flush_interval() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let mut w = Weir::new();
    w.set_config("[log]\nflush_ms = 1500\n");
    let mut writer = w
        .cmd(&["log", "write"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = writer.stdin.take().unwrap();
    let mut printed = BufReader::new(writer.stdout.take().unwrap()).lines();
    // The first record after idleness is written at once.
    stdin.write_all(b"one\n").unwrap();
    assert_eq!(printed.next().unwrap().unwrap(), "1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while w.tail_json(&[]).is_empty() {
        assert!(Instant::now() < deadline, "record 1 never reached the file");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The next one waits in the writer for the rest of its flush interval.
    stdin.write_all(b"two\n").unwrap();
    assert_eq!(printed.next().unwrap().unwrap(), "2");
    let out = w.run(&["log", "tail", "--from", "3"], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--from 3 refused: {err}");
    drop(stdin);
    assert!(writer.wait().unwrap().success());
    let names: Vec<Value> = w.tail_json(&[]).iter().map(|r| r["name"].clone()).collect();
    assert_eq!(names, ["one", "two"]);
}
