//! `weir-bench ship`: the shipper against a real nats-server with durable
//! acknowledgements (`sync_interval: always`, every acknowledged batch
//! fsynced by the broker).
//!
//! - **Throughput**: one host's log of 100-byte records shipped into
//!   JetStream, side by side in each round with the NATS client's own
//!   bench tool (`nats bench js pub atomic`, the same publish as weir's,
//!   and `async --dedup`, windowed single publishes with message ids) at
//!   the size of weir's messages on the wire.
//! - **CPU**: the shipper's own threads at 1000 records/s (the log's
//!   committer and the appender are not the shipper's).
//! - **Fleet**: many simulated hosts (a log and a shipper each, their
//!   logs on tmpfs as each real host has its own disk) at 10 records/s
//!   each into one stream: append-to-`fleet tail` latency, and the
//!   broker's CPU.
//! - **Kafka** ([`kafka`]): throughput beside Kafka's own producer bench,
//!   and the shipper's CPU, against a real single-node Kafka when its
//!   jars are here (the test script fetches them).

mod broker;
mod fleet;
mod kafka;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;
use tokio::sync::watch;
use weir_log::{Log, Options, Record, RecordType};
use weir_ship::nats::NatsOptions;
use weir_ship::{ShipOptions, Shipper, Sink};

use crate::report::{emit, median, skipped};
use broker::{Broker, threads_cpu};

/// Options of `weir-bench ship`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Short run: 1 round of 20,000 records, 5 s of CPU, 200 hosts for
    /// 10 s.
    #[arg(long)]
    quick: bool,
    /// Records per throughput round [default: 100000].
    #[arg(long)]
    records: Option<u64>,
    /// Throughput rounds [default: 3].
    #[arg(long)]
    rounds: Option<usize>,
    /// Simulated hosts [default: 1000].
    #[arg(long)]
    hosts: Option<usize>,
    /// Seconds the fleet runs [default: 30].
    #[arg(long)]
    fleet_secs: Option<u64>,
    /// The simulated hosts' linger, ms: with a durable ack per batch, the
    /// fleet's batches per second must stay under the broker's fsyncs
    /// per second.
    #[arg(long, default_value_t = 1000)]
    fleet_linger_ms: u64,
    /// The linger of the CPU phases' shippers (NATS and Kafka), ms
    /// [default: the shipper's].
    #[arg(long)]
    cpu_linger_ms: Option<u64>,
    /// A directory on a disk filesystem, for the broker's store and the
    /// one host's log.
    #[arg(long, default_value = "/var/tmp")]
    dir: std::path::PathBuf,
}

/// The name of the runtime's threads, whose CPU is the shipper's.
const RUNTIME_THREADS: &str = "ship-bench-rt";

/// The record's name: 100 bytes, as the target's "100 B records".
const NAME_BYTES: usize = 100;

pub(crate) fn run(a: Args) -> Result<()> {
    let records = a.records.unwrap_or(if a.quick { 20_000 } else { 100_000 });
    let rounds = a.rounds.unwrap_or(if a.quick { 1 } else { 3 });
    let hosts = a.hosts.unwrap_or(if a.quick { 200 } else { 1000 });
    let fleet_secs = a.fleet_secs.unwrap_or(if a.quick { 10 } else { 30 });
    let cpu_secs = if a.quick { 5 } else { 15 };
    let (Some(server), Some(cli)) = (broker::find("nats-server"), broker::find("nats")) else {
        return skipped(
            "ship",
            "needs nats-server and the nats CLI (go install github.com/nats-io/nats-server/v2@v2.15.2 github.com/nats-io/natscli/nats@latest)",
        );
    };
    let broker = Broker::start(&server, &a.dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(RUNTIME_THREADS)
        .thread_keep_alive(Duration::from_secs(600))
        .enable_all()
        .build()?;

    println!(
        "ship: nats-server {} with sync_interval always; {records} records of {NAME_BYTES} B names per round",
        broker.url()
    );
    let mut weir_rates = Vec::new();
    let mut atomic_rates = Vec::new();
    let mut dedup_rates = Vec::new();
    let mut wire_bytes = 0;
    for round in 0..rounds {
        let dir = tempfile::tempdir_in(&a.dir)?;
        let log = Arc::new(Log::open(dir.path(), Options::default())?);
        fill(&log, records)?;
        wire_bytes = mean_wire_bytes(&log)?;
        let stream = format!("WEIRB{round}");
        let mut nats = NatsOptions::new(broker.url());
        nats.stream.clone_from(&stream);
        let secs = rt.block_on(async {
            let secs = ship_all(&log, nats).await?;
            drop_streams(&broker.url(), &stream).await?;
            anyhow::Ok(secs)
        })?;
        let weir = records as f64 / secs;
        let atomic = broker::nats_bench(&cli, &broker.url(), "atomic", records, wire_bytes, round)?;
        let dedup = broker::nats_bench(&cli, &broker.url(), "async", records, wire_bytes, round)?;
        println!(
            "  round {}: weir ship {weir:.0} rec/s; nats bench atomic --batch 1000 {atomic:.0}, async --dedup {dedup:.0} msgs/s at {wire_bytes} B; weir/atomic {:.2}",
            round + 1,
            weir / atomic
        );
        weir_rates.push(weir);
        atomic_rates.push(atomic);
        dedup_rates.push(dedup);
        drop(log);
    }
    let ratios: Vec<f64> = weir_rates
        .iter()
        .zip(&atomic_rates)
        .map(|(w, n)| w / n)
        .collect();

    let cpu_linger = a
        .cpu_linger_ms
        .map_or_else(|| ShipOptions::new("x").linger, Duration::from_millis);
    let mut nats = NatsOptions::new(broker.url());
    nats.stream = "WEIRCPU".into();
    let cpu = rt.block_on(async {
        let cpu = cpu_at_rate(
            nats.into(),
            &a.dir,
            1000,
            cpu_secs,
            cpu_linger,
            &[RUNTIME_THREADS],
            Duration::from_secs(1),
        )
        .await?;
        drop_streams(&broker.url(), "WEIRCPU").await?;
        anyhow::Ok(cpu)
    })?;
    println!(
        "  shipper CPU at 1000 records/s for {cpu_secs} s, linger {} ms: {:.2}% of a core",
        cpu_linger.as_millis(),
        cpu * 100.0
    );

    let linger = Duration::from_millis(a.fleet_linger_ms);
    let f = fleet::run(&rt, &broker, hosts, fleet_secs, linger)?;
    println!(
        "  fleet: when the appends stopped the broker held {} and fleet tail had seen {} of {}",
        f.acked_at_end, f.seen_at_end, f.appended
    );
    println!(
        "  fleet: {hosts} hosts x 10 records/s, linger {} ms, for {fleet_secs} s: {} records seen by fleet tail (of {}), latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; broker CPU {:.0}% of a core, RSS {} MiB",
        a.fleet_linger_ms,
        f.seen,
        f.appended,
        f.p50_ms,
        f.p99_ms,
        f.max_ms,
        f.broker_cpu * 100.0,
        f.broker_rss_mib
    );
    let k = match kafka::KafkaBroker::start() {
        Some(node) => Some(kafka::run(
            &rt, &node, &a.dir, records, rounds, cpu_secs, cpu_linger,
        )?),
        None => {
            println!("  kafka: skipped (no Kafka jars or no java)");
            None
        }
    };
    let kafka_ratio = |peer: fn(&kafka::Figures) -> &Vec<f64>| {
        k.as_ref().map(|k| {
            k.weir
                .iter()
                .zip(peer(k))
                .map(|(w, p)| w / p)
                .collect::<Vec<f64>>()
        })
    };
    let (vs_plain, vs_txn) = (kafka_ratio(|k| &k.plain), kafka_ratio(|k| &k.transactional));
    drop(rt);
    emit(&json!({
        "bench": "ship",
        "records": records,
        "rounds": rounds,
        "wire_bytes": wire_bytes,
        "weir_rec_per_s": weir_rates,
        "nats_atomic_msgs_per_s": atomic_rates,
        "nats_async_dedup_msgs_per_s": dedup_rates,
        "ratio_vs_atomic": ratios,
        "ratio_vs_atomic_median": median(&ratios),
        "shipper_cpu_at_1000_per_s": cpu,
        "shipper_cpu_linger_ms": cpu_linger.as_millis() as u64,
        "fleet_hosts": hosts,
        "fleet_secs": fleet_secs,
        "fleet_linger_ms": a.fleet_linger_ms,
        "fleet_appended": f.appended,
        "fleet_seen": f.seen,
        "fleet_acked_at_end": f.acked_at_end,
        "fleet_seen_at_end": f.seen_at_end,
        "fleet_p50_ms": f.p50_ms,
        "fleet_p99_ms": f.p99_ms,
        "fleet_max_ms": f.max_ms,
        "broker_cpu": f.broker_cpu,
        "broker_rss_mib": f.broker_rss_mib,
        "kafka_wire_bytes": k.as_ref().map(|k| k.wire_bytes),
        "kafka_weir_rec_per_s": k.as_ref().map(|k| &k.weir),
        "kafka_perf_plain_rec_per_s": k.as_ref().map(|k| &k.plain),
        "kafka_perf_transactional_rec_per_s": k.as_ref().map(|k| &k.transactional),
        "kafka_ratio_vs_plain": vs_plain,
        "kafka_ratio_vs_plain_median": vs_plain.as_deref().map(median),
        "kafka_ratio_vs_transactional": vs_txn,
        "kafka_ratio_vs_transactional_median": vs_txn.as_deref().map(median),
        "kafka_shipper_cpu_at_1000_per_s": k.as_ref().map(|k| k.cpu),
    }));
    Ok(())
}

/// `n` durable CREAT records with 100-byte names.
fn fill(log: &Log, n: u64) -> Result<()> {
    let mut name = [b'n'; NAME_BYTES];
    for i in 0..n {
        let digits = i.to_string();
        name[..digits.len()].copy_from_slice(digits.as_bytes());
        let _ = log.append(
            &Record::new(RecordType::CREAT)
                .name(&name)
                .target(&i.to_le_bytes()),
        )?;
    }
    log.sync()?;
    Ok(())
}

/// The mean size of the log's records as shipped.
fn mean_wire_bytes(log: &Log) -> Result<usize> {
    let inc = log.incarnation();
    let (mut n, mut bytes) = (0, 0);
    for r in log.reader(1).take(1000) {
        bytes += weir_ship::wire::encode("bench-host", inc, &r?).len();
        n += 1;
    }
    if n == 0 {
        bail!("the log is empty");
    }
    Ok(bytes / n)
}

/// Ships the whole log to `sink`; the seconds it took, from the
/// shipper's start to the broker's acknowledgement of the last record.
pub(super) async fn ship_all(log: &Arc<Log>, sink: impl Into<Sink>) -> Result<f64> {
    let shipper = Shipper::new(log.clone(), sink, ShipOptions::new("bench-host"))?;
    let stats = shipper.stats();
    let (stop, rx) = watch::channel(false);
    let last = log.last_index();
    let t0 = Instant::now();
    let task = tokio::spawn(shipper.run(rx));
    while stats.report().acked_index < last {
        if task.is_finished() {
            bail!("the shipper stopped: {:?}", stats.report());
        }
        if t0.elapsed() > Duration::from_secs(600) {
            bail!("shipping stalled: {:?}", stats.report());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let secs = t0.elapsed().as_secs_f64();
    let _ = stop.send(true);
    task.await.context("the shipper's task")??;
    Ok(secs)
}

/// Deletes a stream and its progress stream: every weir stream takes
/// `weir.>`, so the next phase's cannot be made beside it.
pub(super) async fn drop_streams(url: &str, stream: &str) -> Result<()> {
    let mut o = NatsOptions::new(url);
    o.stream = stream.to_owned();
    let (nats, _) = weir_ship::nats::Nats::connect(&o).await?;
    for name in [o.stream.clone(), o.status_stream()] {
        nats.context()
            .delete_stream(&name)
            .await
            .with_context(|| format!("deleting stream {name}"))?;
    }
    Ok(())
}

/// The shipper's threads' CPU (those named with one of `threads`), as a
/// share of one core, while a log takes `rate` records a second for
/// `secs` seconds, after a start-up of `warm_up`.
pub(super) async fn cpu_at_rate(
    sink: Sink,
    dir: &std::path::Path,
    rate: u64,
    secs: u64,
    linger: Duration,
    threads: &[&str],
    warm_up: Duration,
) -> Result<f64> {
    let tmp = tempfile::tempdir_in(dir)?;
    let log = Arc::new(Log::open(tmp.path(), Options::default())?);
    let mut o = ShipOptions::new("cpu-host");
    o.linger = linger;
    let shipper = Shipper::new(log.clone(), sink, o)?;
    let stats = shipper.stats();
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(shipper.run(rx));
    let run_for = warm_up + Duration::from_secs(secs + 1);
    let appender = {
        let log = log.clone();
        std::thread::spawn(move || -> Result<()> {
            let name = [b'c'; NAME_BYTES];
            // Ten records every 10 ms.
            let start = Instant::now();
            let mut sent = 0u64;
            while start.elapsed() < run_for {
                let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
                while sent < due {
                    let _ = log.append(&Record::new(RecordType::CREAT).name(&name))?;
                    sent += 1;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        })
    };
    // Past the start-up (connect, stream or topics, transactions).
    tokio::time::sleep(warm_up).await;
    let before = threads_cpu(threads)?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let used = threads_cpu(threads)? - before;
    let wall = t0.elapsed().as_secs_f64();
    appender
        .join()
        .map_err(|_| anyhow::anyhow!("the appender panicked"))??;
    let r = stats.report();
    let _ = stop.send(true);
    task.await.context("the shipper's task")??;
    // What the linger holds back at the end is not behind.
    let held = rate * (linger.as_millis() as u64 / 1000 + 1);
    if r.shipped + held < rate * secs {
        bail!("the shipper fell behind at {rate} records/s: {r:?}");
    }
    Ok(used / wall)
}
