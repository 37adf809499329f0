//! `weir ship` (the log shipped to NATS JetStream or Kafka in the
//! foreground) and
//! `weir fleet tail|status` (the fleet's records read back).
//!
//! `weir ship` opens the log as its writer, as every foreground command
//! does, so it runs where no daemon holds the state directory. It says
//! where it resumed, warns about the stream's durability, and prints a
//! line of figures every ten seconds and at the end on stderr.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::sync::watch;
use weir_log::TypeMask;
use weir_ship::fleet::{self, HostGlob, TailOptions};
use weir_ship::kafka::{Kafka, KafkaOptions};
use weir_ship::nats::{Nats, NatsOptions};
use weir_ship::{ShipOptions, ShipReport, Shipper, Sink};
use weir_view::record::record_line;

use super::foreground::{close_log, print_line};
use crate::cli::{BrokerArgs, FleetStatusArgs, FleetTailArgs, ShipArgs};
use crate::signals;
use crate::state_dir::StateDir;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The sink the flags name (clap lets exactly one through).
fn sink(b: &BrokerArgs, replicas: u16, partitions: u16) -> Sink {
    match (&b.nats, &b.kafka) {
        (Some(url), _) => {
            let mut o = NatsOptions::new(url.clone());
            o.stream.clone_from(&b.stream);
            o.replicas = usize::from(replicas);
            o.into()
        }
        (None, brokers) => {
            let mut o = KafkaOptions::new(brokers.clone().unwrap_or_default());
            o.topic.clone_from(&b.topic);
            o.replicas = i32::from(replicas);
            o.partitions = i32::from(partitions);
            o.properties.clone_from(&b.kafka_properties);
            o.into()
        }
    }
}

/// A fleet reader of the sink the flags name.
enum Fleet {
    // Boxed: a JetStream context is kilobytes.
    Nats(Box<Nats>),
    Kafka(Kafka),
}

impl Fleet {
    async fn connect(b: &BrokerArgs) -> Result<Fleet> {
        Ok(match sink(b, 1, 1) {
            Sink::Nats(o) => Fleet::Nats(Box::new(Nats::connect(&o).await?.0)),
            Sink::Kafka(o) => Fleet::Kafka(Kafka::connect(&o).await?.0),
            _ => anyhow::bail!("weir fleet reads NATS or Kafka"),
        })
    }
}

fn figures(r: &ShipReport, durable_index: u64) -> String {
    let err = r
        .last_error
        .as_deref()
        .map(|e| format!(", last error: {e}"))
        .unwrap_or_default();
    format!(
        "{:?}: shipped {}, broker at index {}, lag {}, in flight {}, retries {}, lost to retention {}{err}",
        r.state,
        r.shipped,
        r.acked_index,
        r.lag(durable_index),
        r.in_flight,
        r.retries,
        r.gap_records
    )
}

pub(super) fn ship(state: &StateDir, a: &ShipArgs) -> Result<()> {
    let stop_flag = signals::stop_flag()?;
    let host = match &a.host {
        Some(h) => h.clone(),
        None => weir_ship::machine_host()?,
    };
    let sink = sink(&a.broker, a.replicas, a.partitions);
    let mut opts = ShipOptions::new(host.clone());
    opts.mask = a.mask.clone().unwrap_or_else(TypeMask::all);
    opts.consumer.clone_from(&a.consumer);
    opts.linger = Duration::from_millis(a.linger_ms);
    let log = Arc::new(state.open_writer()?);
    let shipper = Shipper::new(log.clone(), sink, opts).context("the shipper's options")?;
    let stats = shipper.stats();
    let s = shipper.sink();
    let target = if matches!(s, Sink::Kafka(_)) {
        "topic"
    } else {
        "stream"
    };
    eprintln!(
        "weir: shipping {} as host {host:?} to {} {} ({target} {})",
        log.dir().display(),
        s.kind(),
        s.shown(),
        s.target()
    );
    let shown_stats = stats.clone();
    let shown_log = log.clone();
    let out = runtime()?.block_on(async move {
        let stats = shown_stats;
        let (tx, rx) = watch::channel(false);
        let task = tokio::spawn(shipper.run(rx));
        let mut shown = Instant::now();
        while !stop_flag.load(Ordering::Relaxed) && !task.is_finished() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if shown.elapsed() >= Duration::from_secs(10) {
                eprintln!(
                    "weir: {}",
                    figures(&stats.report(), shown_log.durable_index())
                );
                shown = Instant::now();
            }
        }
        let _ = tx.send(true);
        task.await.context("the shipper's task")
    })?;
    eprintln!("weir: {}", figures(&stats.report(), log.durable_index()));
    let closed = close_log(log);
    out.context("shipping")?;
    closed
}

pub(super) fn fleet_tail(a: &FleetTailArgs) -> Result<()> {
    let o = TailOptions {
        hosts: a.host.clone().map(HostGlob::new),
        mask: a.mask.clone().unwrap_or_else(TypeMask::all),
        follow: a.follow,
    };
    let json = a.json;
    runtime()?.block_on(async {
        let emit = |s: &weir_ship::wire::Shipped| {
            let line = if json {
                weir_ship::wire::fleet_line(&s.host, &s.record)
            } else {
                format!("{} {}", s.host, record_line(&s.record))
            };
            print_line(&line)
        };
        anyhow::Ok(match Fleet::connect(&a.broker).await? {
            Fleet::Nats(n) => fleet::tail(&n, &o, emit).await?,
            Fleet::Kafka(k) => fleet::kafka::tail(&k, &o, emit).await?,
        })
    })?;
    Ok(())
}

pub(super) fn fleet_status(a: &FleetStatusArgs) -> Result<()> {
    let hosts = runtime()?.block_on(async {
        anyhow::Ok(match Fleet::connect(&a.broker).await? {
            Fleet::Nats(n) => fleet::status(&n).await?,
            Fleet::Kafka(k) => fleet::kafka::status(&k).await?,
        })
    })?;
    if a.json {
        for h in &hosts {
            print_line(&serde_json::to_string(h)?)?;
        }
        return Ok(());
    }
    let mut out = crate::stdout::lock();
    std::io::Write::write_all(&mut out, fleet::status_text(&hosts).as_bytes())?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}
