//! Shipping against a real nats-server and a real Kafka, from the binary:
//!
//! - `weir ship` killed with SIGKILL at random moments, 50 times, while
//!   100,000 records arrive between its runs: the stream ends with
//!   every index once, in order, with the log's payload, as `weir fleet
//!   tail --json` prints it;
//! - `weir run` with `--ship-nats`, and with `--ship-kafka`: the daemon
//!   ships what it logs, shows the shipper in `weir status` and
//!   `/metrics`, rides out a broker crash (retrying, the records held by
//!   the log), and the stream ends with every record once, as `weir log
//!   tail` has it.

#[path = "../../ship/tests/support/mod.rs"]
mod broker;
#[path = "support/child_lines.rs"]
mod child_lines;
// The daemon test uses a part of it.
#[allow(dead_code)]
#[path = "support/daemon_child.rs"]
mod daemon_child;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use daemon_child::{Daemon, client, ok, status};

use serde_json::Value;

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

fn weir(state: &Path) -> Command {
    let mut c = Command::new(WEIR);
    c.arg("--state-dir").arg(state).arg("--direct");
    c.env_remove("WEIR_SOCKET");
    c
}

/// Runs `log write` (`cmd`, a `weir` with its options) for records
/// `file-FIRST` to `file-(FIRST+N-1)`.
fn write_with(mut cmd: Command, first: u64, n: u64) {
    let mut child = cmd
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

fn write(state: &Path, first: u64, n: u64) {
    write_with(weir(state), first, n);
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    std::str::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `weir fleet tail --json`'s lines are `weir log tail --json`'s, one for
/// one, each with `host` added.
fn assert_shipped_as_logged(shipped: &[Value], mut logged: Vec<Value>, host: &str) {
    assert_eq!(
        shipped.len(),
        logged.len(),
        "the stream holds another count"
    );
    for (s, l) in shipped.iter().zip(logged.iter_mut()) {
        l.as_object_mut()
            .unwrap()
            .insert("host".into(), Value::from(host));
        assert_eq!(s, l);
    }
}

#[test]
fn fifty_sigkills_lose_and_repeat_nothing() {
    let Some(server) = broker::NatsServer::start() else {
        return;
    };
    // Start-up takes tens of ms; the kills land before, during and after
    // the batches.
    sigkills_lose_and_repeat_nothing(&["--nats", &server.url()], 50, 250);
}

#[test]
fn sigkills_mid_transaction_lose_and_repeat_nothing_on_kafka() {
    let Some(broker) = broker::kafka::KafkaBroker::start() else {
        return;
    };
    // Start-up (topics, init_transactions) takes up to a second or so.
    sigkills_lose_and_repeat_nothing(&["--kafka", &broker.brokers()], 50, 1500);
}

/// `weir ship` to `sink` (its flags) killed with SIGKILL `kills` times,
/// at most `max_ms` into each run, with 2000 records written before each:
/// the fleet ends with every record once, as the log has them.
fn sigkills_lose_and_repeat_nothing(sink: &[&str], kills: u64, max_ms: u64) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut written = 0;
    for _ in 0..kills {
        write(state, written + 1, 2000);
        written += 2000;
        let mut ship = weir(state)
            .arg("ship")
            .args(sink)
            .args(["--host", "kill-9"])
            .env("RUST_LOG", "error")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(5 + seed % max_ms));
        ship.kill().unwrap();
        ship.wait().unwrap();
    }
    // A last run that is let finish: SIGINT once the broker has it all.
    let mut ship = weir(state)
        .arg("ship")
        .args(sink)
        .args(["--host", "kill-9"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let status = || {
        let out = Command::new(WEIR)
            .args(["fleet", "status", "--json"])
            .args(sink)
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
        .args(["fleet", "tail", "--json"])
        .args(sink)
        .output()
        .unwrap();
    assert!(fleet.status.success());
    let shipped = json_lines(&fleet.stdout);
    let local = weir(state)
        .args(["log", "tail", "--json"])
        .output()
        .unwrap();
    let logged = json_lines(&local.stdout);
    // The log also holds nothing but these records: the shipper's
    // consumer leaves no record of its own.
    assert_eq!(logged.len() as u64, written);
    assert_shipped_as_logged(&shipped, logged, "kill-9");
}

const HOST: &str = "daemon-1";

/// Polls `/v1/status` until `done` holds for its `ship` section.
fn wait_ship(socket: &Path, what: &str, done: impl Fn(&Value, &Value) -> bool) -> Value {
    let mut c = client(socket);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = status(&mut c);
        if done(&s["ship"], &s["log"]) {
            return s;
        }
        assert!(Instant::now() < deadline, "{what}: {:#}", s["ship"]);
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `weir run` with only its log, shipping as [`HOST`] with `ship` (the
/// sink's flags).
fn shipping_daemon(state: &Path, socket: &Path, ship: &[&str]) -> Daemon {
    let mut args = vec![
        "--mounts-enabled",
        "false",
        "--devices-enabled",
        "false",
        "--ship-host",
        HOST,
    ];
    args.extend_from_slice(ship);
    Daemon::start(state, socket, &args)
}

/// A broker the daemon test can crash and bring back.
trait Crashable {
    fn kill(&mut self);
    fn restart(&mut self);
}

impl Crashable for broker::NatsServer {
    fn kill(&mut self) {
        broker::NatsServer::kill(self);
    }
    fn restart(&mut self) {
        broker::NatsServer::restart(self);
    }
}

impl Crashable for broker::kafka::KafkaBroker {
    fn kill(&mut self) {
        broker::kafka::KafkaBroker::kill(self);
    }
    fn restart(&mut self) {
        broker::kafka::KafkaBroker::restart(self);
    }
}

#[test]
fn the_daemon_ships_through_a_broker_crash() {
    let Some(mut server) = broker::NatsServer::start() else {
        return;
    };
    let url = server.url();
    daemon_ships_through_a_crash(&mut server, "nats", &url, "WEIR");
}

#[test]
fn the_daemon_ships_to_kafka_through_a_broker_crash() {
    let Some(mut broker) = broker::kafka::KafkaBroker::start() else {
        return;
    };
    let brokers = broker.brokers();
    daemon_ships_through_a_crash(&mut broker, "kafka", &brokers, "weir");
}

/// `weir run --ship-SINK URL` ships what it logs, shows the shipper in
/// status, text and metrics, retries through the broker's crash, and
/// the stream or topic (`target`) ends with every record once.
fn daemon_ships_through_a_crash(server: &mut dyn Crashable, sink: &str, url: &str, target: &str) {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: the daemon's socket group needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (state, socket) = (dir.path().join("state"), dir.path().join("weir.sock"));
    let daemon = shipping_daemon(&state, &socket, &[&format!("--ship-{sink}"), url]);
    write_with(daemon_child::weir(&socket, &[]), 1, 5000);
    // `log write` returns once its records are appended, before the
    // group commit makes them durable; caught up is every appended record
    // acknowledged, not only the durable ones of the moment.
    let caught_up = |h: &Value, l: &Value| {
        h["state"] == "shipping" && h["lag"] == 0 && h["acked_index"] == l["last_index"]
    };
    let s = wait_ship(&socket, "shipping the first records", caught_up);
    let h = &s["ship"];
    assert_eq!(h["sink"], sink);
    assert_eq!(h["host"], HOST);
    assert_eq!(h["stream"], target);
    assert_eq!(h["url"], Value::from(url));
    assert!(h["shipped"].as_u64().unwrap() >= 5000, "{h}");
    assert_eq!(h["last_error"], Value::Null);

    // The shipper's consumer holds retention back, as any consumer.
    let consumers = ok(daemon_child::weir(
        &socket,
        &["log", "consumer", "list", "--json"],
    ));
    assert!(
        String::from_utf8_lossy(&consumers).contains(&format!("\"ship-{sink}\"")),
        "{}",
        String::from_utf8_lossy(&consumers)
    );

    server.kill();
    write_with(daemon_child::weir(&socket, &[]), 5001, 3000);
    let s = wait_ship(&socket, "retrying while the broker is down", |h, _| {
        h["state"] == "retrying" && h["retries"].as_u64() > Some(0) && h["lag"].as_u64() > Some(0)
    });
    assert!(s["ship"]["last_error"].is_string(), "{}", s["ship"]);
    let text = String::from_utf8(ok(daemon_child::weir(&socket, &["status"]))).unwrap();
    let line = text.lines().find(|l| l.starts_with("ship:")).unwrap();
    assert!(line.contains(&format!("as {HOST}; retrying;")), "{text}");
    assert!(text.contains("\n  last error: "), "{text}");
    let mut metrics = Vec::new();
    client(&socket).get_text("/metrics", &mut metrics).unwrap();
    let metrics = String::from_utf8(metrics).unwrap();
    let labels = format!("{{sink=\"{sink}\",stream=\"{target}\",host=\"{HOST}\"}}");
    assert!(
        metrics.contains(&format!("weir_ship_up{labels} 0\n")),
        "{metrics}"
    );
    let lag = metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("weir_ship_lag_records{labels} ")))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(lag > Some(0), "{metrics}");

    server.restart();
    write_with(daemon_child::weir(&socket, &[]), 8001, 2000);
    wait_ship(&socket, "catching up after the restart", caught_up);
    daemon.stop();

    let fleet = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["fleet", "tail", "--json", &format!("--{sink}"), url])
        .output()
        .unwrap();
    assert!(fleet.status.success());
    let shipped = json_lines(&fleet.stdout);
    let local = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("--state-dir")
        .arg(&state)
        .args(["--direct", "log", "tail", "--json"])
        .env_remove("WEIR_SOCKET")
        .output()
        .unwrap();
    assert!(local.status.success());
    let mut logged = json_lines(&local.stdout);
    // The daemon's start and stop MARKs are shipped too; the stop MARK
    // comes after the shipper stopped, so the broker lacks it.
    let last = logged.pop().unwrap();
    assert_eq!(last["type"], "MARK", "{last}");
    assert!(logged.len() >= 10_000);
    assert_shipped_as_logged(&shipped, logged, HOST);
}

/// `weir run --ship-kafka-property` reaches a broker over TLS, and `weir
/// fleet tail --kafka-property` reads the records back the same way.
#[test]
fn the_daemon_ships_to_kafka_over_tls() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: the daemon's socket group needs root");
        return;
    }
    let Some(broker) = broker::kafka::KafkaBroker::start_tls() else {
        return;
    };
    let brokers = broker.tls_brokers();
    let ca = format!("ssl.ca.location={}", broker.ca().display());
    let dir = tempfile::tempdir().unwrap();
    let (state, socket) = (dir.path().join("state"), dir.path().join("weir.sock"));
    let daemon = shipping_daemon(
        &state,
        &socket,
        &[
            "--ship-kafka",
            &brokers,
            "--ship-kafka-property",
            "security.protocol=ssl",
            "--ship-kafka-property",
            &ca,
        ],
    );
    write_with(daemon_child::weir(&socket, &[]), 1, 500);
    wait_ship(&socket, "shipping over TLS", |h, l| {
        h["state"] == "shipping" && h["acked_index"] == l["last_index"]
    });
    daemon.stop();

    let tail = |props: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_weir"));
        c.args(["fleet", "tail", "--json", "--kafka", &brokers]);
        for p in props {
            c.args(["--kafka-property", p]);
        }
        c.output().unwrap()
    };
    let fleet = tail(&["security.protocol=ssl", &ca]);
    assert!(fleet.status.success(), "{fleet:?}");
    let shipped = json_lines(&fleet.stdout);
    let names: Vec<&str> = shipped
        .iter()
        .filter(|r| r["type"] == "CREAT")
        .filter_map(|r| r["name"].as_str())
        .collect();
    let want: Vec<String> = (1..=500).map(|i| format!("file-{i}")).collect();
    assert_eq!(names, want);
    assert!(shipped.iter().all(|r| r["host"] == HOST));
    // A property weir sets itself is refused before anything runs.
    let owned = tail(&["enable.idempotence=false"]);
    assert_eq!(owned.status.code(), Some(2), "{owned:?}");
    assert!(
        String::from_utf8_lossy(&owned.stderr).contains("weir sets this property itself"),
        "{owned:?}"
    );
}
