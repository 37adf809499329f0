//! Many simulated hosts shipping into one stream: each a log of its own
//! (on tmpfs when there is one: each real host fsyncs its own disk, which
//! one machine's disk cannot do for a thousand) and a shipper with its own
//! connection, as a fleet's would be. One appender gives every host a
//! record each 100 ms; one `fleet tail` follows the stream and times each
//! record from its append (the record's time) to its arrival.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use tokio::runtime::Runtime;
use tokio::sync::watch;
use weir_log::{Log, Options, Preallocation, Record, RecordType, TypeMask};
use weir_ship::fleet::{self, TailOptions};
use weir_ship::nats::{Nats, NatsOptions};
use weir_ship::{ShipOptions, ShipState, Shipper};

use super::NAME_BYTES;
use super::broker::Broker;
use crate::report::quantile;

const STREAM: &str = "WEIRFLEET";

/// What the fleet run measured.
pub(super) struct Figures {
    pub(super) appended: u64,
    /// Records the broker had acknowledged when the appends stopped.
    pub(super) acked_at_end: u64,
    /// Records `fleet tail` had seen then.
    pub(super) seen_at_end: u64,
    pub(super) seen: u64,
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) max_ms: f64,
    /// The broker's CPU while records flowed, in cores.
    pub(super) broker_cpu: f64,
    pub(super) broker_rss_mib: u64,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn small_log(dir: &Path) -> Result<Log> {
    let o = Options {
        segment_size: 1 << 20,
        ring_slots: 256,
        preallocation: Preallocation::Reserve,
        ..Options::default()
    };
    Ok(Log::open(dir, o)?)
}

pub(super) fn run(
    rt: &Runtime,
    broker: &Broker,
    hosts: usize,
    secs: u64,
    linger: Duration,
) -> Result<Figures> {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        tempfile::tempdir_in(shm)?
    } else {
        tempfile::tempdir()?
    };
    let mut logs = Vec::with_capacity(hosts);
    for i in 0..hosts {
        let d = base.path().join(i.to_string());
        std::fs::create_dir(&d)?;
        logs.push(Arc::new(small_log(&d)?));
    }
    let (stop, rx) = watch::channel(false);
    let mut tasks = Vec::with_capacity(hosts);
    let mut stats = Vec::with_capacity(hosts);
    for (i, log) in logs.iter().enumerate() {
        let mut nats = NatsOptions::new(broker.url());
        nats.stream = STREAM.into();
        let mut o = ShipOptions::new(format!("sim-{i:04}"));
        o.linger = linger;
        let s = Shipper::new(log.clone(), nats, o)?;
        stats.push(s.stats());
        tasks.push(rt.spawn(s.run(rx.clone())));
    }
    // Every shipper connected and resumed before the clock starts.
    let deadline = Instant::now() + Duration::from_secs(120);
    while stats
        .iter()
        .any(|s| s.report().state != ShipState::Shipping)
    {
        if Instant::now() > deadline {
            bail!("not every simulated host got to shipping in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }

    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let seen = Arc::new(AtomicU64::new(0));
    let tail = {
        let (latencies, seen) = (latencies.clone(), seen.clone());
        let url = broker.url();
        rt.spawn(async move {
            let mut o = NatsOptions::new(url);
            o.stream = STREAM.into();
            let (nats, _) = Nats::connect(&o).await?;
            let opts = TailOptions {
                hosts: None,
                mask: TypeMask::all(),
                follow: true,
            };
            fleet::tail(&nats, &opts, |s| {
                let ms = now_ns().saturating_sub(s.record.time_ns) as f64 / 1e6;
                latencies.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
                seen.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .await
        })
    };

    let cpu0 = broker.cpu()?;
    let t0 = Instant::now();
    let mut appended = 0u64;
    let name = [b's'; NAME_BYTES];
    let mut tick = t0;
    while t0.elapsed() < Duration::from_secs(secs) {
        for log in &logs {
            let _ = log.append(&Record::new(RecordType::CREAT).name(&name))?;
            appended += 1;
        }
        tick += Duration::from_millis(100);
        if let Some(d) = tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    let broker_cpu = (broker.cpu()? - cpu0) / t0.elapsed().as_secs_f64();
    let broker_rss_mib = broker.rss_mib()?;
    let acked_at_end: u64 = stats.iter().map(|s| s.report().shipped).sum();
    let seen_at_end = seen.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.load(Ordering::Relaxed) < appended && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = stop.send(true);
    tail.abort();
    for t in tasks {
        rt.block_on(t).context("a shipper's task")??;
    }
    let lat = latencies.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok(Figures {
        appended,
        acked_at_end,
        seen_at_end,
        seen: seen.load(Ordering::Relaxed),
        p50_ms: quantile(&lat, 0.5),
        p99_ms: quantile(&lat, 0.99),
        max_ms: lat.iter().copied().fold(0.0, f64::max),
        broker_cpu,
        broker_rss_mib,
    })
}
