//! `weir-bench ship`'s Kafka phase: one host's log shipped into a topic
//! of a real single-node Kafka (each message on disk before its
//! acknowledgement, `log.flush.interval.messages=1`, as the NATS phase's
//! `sync_interval: always`), side by side in each round with Kafka's own
//! producer bench (`ProducerPerformance`, what `kafka-producer-perf-test`
//! runs) at the size of weir's messages, `acks=all`, plain and
//! transactional; and the shipper's CPU at 1000 records/s, its
//! librdkafka threads included.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use weir_log::{Log, Options};
use weir_ship::kafka::{Kafka, KafkaOptions};

use super::{RUNTIME_THREADS, cpu_at_rate, fill, mean_wire_bytes, ship_all};

// The tests' Kafka node: one process in KRaft mode, its jars from the
// test script's cache.
#[path = "../../../ship/tests/support/kafka.rs"]
#[allow(dead_code, unreachable_pub)]
mod node;

pub(super) use node::KafkaBroker;

/// The figures of the Kafka phase.
pub(super) struct Figures {
    pub(super) weir: Vec<f64>,
    pub(super) plain: Vec<f64>,
    pub(super) transactional: Vec<f64>,
    pub(super) wire_bytes: usize,
    pub(super) cpu: f64,
}

/// The shipper's threads: the runtime's and librdkafka's.
const THREADS: [&str; 2] = [RUNTIME_THREADS, "rdk:"];

pub(super) fn run(
    rt: &tokio::runtime::Runtime,
    broker: &KafkaBroker,
    dir: &Path,
    records: u64,
    rounds: usize,
    cpu_secs: u64,
    cpu_linger: Duration,
) -> Result<Figures> {
    let mut f = Figures {
        weir: Vec::new(),
        plain: Vec::new(),
        transactional: Vec::new(),
        wire_bytes: 0,
        cpu: 0.0,
    };
    for round in 0..rounds {
        let tmp = tempfile::tempdir_in(dir)?;
        let log = Arc::new(Log::open(tmp.path(), Options::default())?);
        fill(&log, records)?;
        f.wire_bytes = mean_wire_bytes(&log)?;
        let mut o = KafkaOptions::new(broker.brokers());
        o.topic = format!("weirb{round}");
        let secs = rt.block_on(ship_all(&log, o))?;
        let weir = records as f64 / secs;
        let plain = rt.block_on(perf(broker, round, "plain", records, f.wire_bytes))?;
        let txn = rt.block_on(perf(broker, round, "txn", records, f.wire_bytes))?;
        println!(
            "  kafka round {}: weir ship {weir:.0} rec/s; ProducerPerformance acks=all {plain:.0}, transactional {txn:.0} rec/s at {} B; weir/plain {:.2}, weir/transactional {:.2}",
            round + 1,
            f.wire_bytes,
            weir / plain,
            weir / txn
        );
        f.weir.push(weir);
        f.plain.push(plain);
        f.transactional.push(txn);
    }
    let mut o = KafkaOptions::new(broker.brokers());
    o.topic = "weircpu".into();
    f.cpu = rt.block_on(cpu_at_rate(
        o.into(),
        dir,
        1000,
        cpu_secs,
        cpu_linger,
        &THREADS,
        Duration::from_secs(2),
    ))?;
    println!(
        "  kafka shipper CPU at 1000 records/s for {cpu_secs} s, linger {} ms: {:.2}% of a core (its runtime and librdkafka's threads)",
        cpu_linger.as_millis(),
        f.cpu * 100.0
    );
    Ok(f)
}

/// `ProducerPerformance` into a new topic: records/s of `n` records of
/// `size` bytes, `acks=all`; `txn` in transactions of 100 ms.
async fn perf(broker: &KafkaBroker, round: usize, mode: &str, n: u64, size: usize) -> Result<f64> {
    let topic = format!("perf{mode}{round}");
    let mut o = KafkaOptions::new(broker.brokers());
    o.topic.clone_from(&topic);
    Kafka::connect(&o).await?;
    let mut c = broker.java();
    c.arg("org.apache.kafka.tools.ProducerPerformance")
        .args(["--topic", &topic, "--num-records", &n.to_string()])
        .args(["--record-size", &size.to_string(), "--throughput", "-1"])
        .arg("--command-property")
        .arg(format!("bootstrap.servers={}", broker.brokers()))
        .arg("acks=all");
    if mode == "txn" {
        c.args(["--transactional-id", &format!("perf-{round}")])
            .args(["--transaction-duration-ms", "100"]);
    }
    let out = tokio::task::spawn_blocking(move || c.output())
        .await?
        .context("running ProducerPerformance")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("ProducerPerformance failed: {text}");
    }
    records_per_sec(&text)
        .with_context(|| format!("no rate in ProducerPerformance's output: {text}"))
}

/// The rate of the summary line, `N records sent, R records/sec (...)`.
fn records_per_sec(text: &str) -> Option<f64> {
    let line = text.lines().rev().find(|l| l.contains(" records sent, "))?;
    let rate = line
        .split(" records sent, ")
        .nth(1)?
        .split(" records/sec")
        .next()?;
    rate.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_producer_performances_rate() {
        let out = "5000 records sent, 999.2 records/sec (0.38 MB/sec), 3.1 ms avg latency, 120.0 ms max latency.\n100000 records sent, 45123.4 records/sec (17.2 MB/sec), 210.5 ms avg latency, 600.0 ms max latency, 200 ms 50th, 500 ms 95th, 580 ms 99th, 600 ms 99.9th.\n";
        assert_eq!(records_per_sec(out), Some(45_123.4));
        assert_eq!(records_per_sec("nothing"), None);
    }
}
