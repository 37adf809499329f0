//! `weir ship` killed with SIGKILL at random moments, 50 times, while
//! 100,000 records arrive between its runs, against a real nats-server:
//! the stream ends with every index once, in order, with the log's
//! payload, as `weir fleet tail --json` prints it.

#[path = "../../ship/tests/support/mod.rs"]
mod broker;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

fn weir(state: &Path) -> Command {
    let mut c = Command::new(WEIR);
    c.arg("--state-dir").arg(state).arg("--direct");
    c.env_remove("WEIR_SOCKET");
    c
}

fn write(state: &Path, first: u64, n: u64) {
    let mut child = weir(state)
        .args(["log", "write", "--type", "CREAT"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let lines: String = (first..first + n).map(|i| format!("file-{i}\n")).collect();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), lines.as_bytes()).unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn fifty_sigkills_lose_and_repeat_nothing() {
    let Some(server) = broker::NatsServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut written = 0;
    for _ in 0..50 {
        write(state, written + 1, 2000);
        written += 2000;
        let mut ship = weir(state)
            .args(["ship", "--nats", &server.url(), "--host", "kill-9"])
            .env("RUST_LOG", "error")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Start-up takes tens of ms; the kills land before, during and
        // after the batches.
        std::thread::sleep(Duration::from_millis(5 + seed % 250));
        ship.kill().unwrap();
        ship.wait().unwrap();
    }
    // A last run that is let finish: SIGINT once the broker has it all.
    let mut ship = weir(state)
        .args(["ship", "--nats", &server.url(), "--host", "kill-9"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = || {
        let out = Command::new(WEIR)
            .args(["fleet", "status", "--json", "--nats", &server.url()])
            .output()
            .unwrap();
        json_lines(&out.stdout)
    };
    while status().first().and_then(|h| h["last_index"].as_u64()) != Some(written) {
        assert!(
            std::time::Instant::now() < deadline,
            "the broker did not get to {written}: {:?}",
            status()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&ship),
        rustix::process::Signal::INT,
    )
    .unwrap();
    assert!(ship.wait().unwrap().success());

    let fleet = Command::new(WEIR)
        .args(["fleet", "tail", "--json", "--nats", &server.url()])
        .output()
        .unwrap();
    assert!(fleet.status.success());
    let shipped = json_lines(&fleet.stdout);
    let local = weir(state)
        .args(["log", "tail", "--json"])
        .output()
        .unwrap();
    let mut logged = json_lines(&local.stdout);
    // The log also holds nothing but these records: the shipper's
    // consumer leaves no record of its own.
    assert_eq!(logged.len() as u64, written);
    assert_eq!(
        shipped.len(),
        logged.len(),
        "the stream holds another count"
    );
    for (s, l) in shipped.iter().zip(logged.iter_mut()) {
        l.as_object_mut()
            .unwrap()
            .insert("host".into(), Value::from("kill-9"));
        assert_eq!(s, l);
    }
}
