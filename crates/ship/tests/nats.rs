//! Shipping to a real nats-server: every record once, in order, through
//! shipper aborts, broker crashes and restarts, new incarnations and
//! retention's evictions; and the fleet read back.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use support::NatsServer;
use tokio::sync::watch;
use weir_log::{Field, Log, LogRecord, Options, Record, RecordType, TypeMask};
use weir_ship::fleet::{self, HostGlob, TailOptions};
use weir_ship::nats::{Nats, NatsOptions};
use weir_ship::wire::Shipped;
use weir_ship::{ShipOptions, Shipper};

const TYPES: [RecordType; 4] = [
    RecordType::CREAT,
    RecordType::UNLNK,
    RecordType::MARK,
    RecordType::RENME,
];

fn append(log: &Log, n: u64) {
    for i in 0..n {
        let k = log.last_appended() + 1;
        let name = format!("f{k}\n\u{e9}");
        let path = format!("d/{k}");
        let fields = [Field {
            key: "path",
            value: path.as_bytes(),
        }];
        let _ = log
            .append(
                &Record::new(TYPES[(k % 4) as usize])
                    .name(name.as_bytes())
                    .target(&k.to_le_bytes())
                    .fields(&fields),
            )
            .unwrap();
        if i % 1000 == 999 {
            log.sync().unwrap();
        }
    }
    log.sync().unwrap();
}

fn opts(url: &str) -> NatsOptions {
    let mut o = NatsOptions::new(url);
    o.timeout = Duration::from_secs(2);
    o
}

/// Starts a shipper on the runtime; returns its stop switch and task.
fn spawn(
    log: &Arc<Log>,
    url: &str,
    host: &str,
) -> (
    watch::Sender<bool>,
    tokio::task::JoinHandle<weir_ship::Result<()>>,
    Arc<weir_ship::ShipStats>,
) {
    let s = Shipper::new(log.clone(), opts(url), ShipOptions::new(host)).unwrap();
    let stats = s.stats();
    let (tx, rx) = watch::channel(false);
    (tx, tokio::spawn(s.run(rx)), stats)
}

async fn until_acked(stats: &weir_ship::ShipStats, last: u64, within: Duration) {
    let deadline = Instant::now() + within;
    while stats.report().acked_index < last {
        assert!(
            Instant::now() < deadline,
            "the broker did not acknowledge up to {last}: {:?}",
            stats.report()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every record of the stream for `host`, in stream order.
async fn stream_records(url: &str, host: &str) -> Vec<Shipped> {
    let (nats, _) = Nats::connect(&opts(url)).await.unwrap();
    let mut out = Vec::new();
    fleet::tail(
        &nats,
        &TailOptions {
            hosts: Some(HostGlob::new(host)),
            mask: TypeMask::all(),
            follow: false,
        },
        |s| {
            out.push(s.clone());
            Ok(())
        },
    )
    .await
    .unwrap();
    out
}

/// The log's records, whole.
fn log_records(log: &Log) -> Vec<LogRecord> {
    log.reader(1).map(|r| r.unwrap()).collect()
}

/// The stream holds the log's every record once, in order, byte for byte.
fn assert_exact(got: &[Shipped], log: &Log, host: &str) {
    let want = log_records(log);
    let got_idx: Vec<u64> = got.iter().map(|s| s.record.index).collect();
    let want_idx: Vec<u64> = want.iter().map(|r| r.index).collect();
    if got_idx != want_idx {
        let dup = got_idx.windows(2).find(|w| w[1] <= w[0]);
        let missing = want_idx.iter().find(|i| !got_idx.contains(i));
        panic!(
            "stream has {} records, the log {}; first out of order {dup:?}, first missing {missing:?}",
            got_idx.len(),
            want_idx.len()
        );
    }
    for (s, r) in got.iter().zip(&want) {
        assert_eq!(s.host, host);
        assert_eq!(s.incarnation, log.incarnation());
        assert_eq!(&s.record, r);
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn ships_every_record_once_in_order() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Log::open(dir.path(), Options::default()).unwrap());
    append(&log, 5000);
    rt().block_on(async {
        let (stop, task, stats) = spawn(&log, &server.url(), "db-1.example");
        until_acked(&stats, log.last_index(), Duration::from_secs(60)).await;
        append(&log, 1234);
        until_acked(&stats, log.last_index(), Duration::from_secs(60)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        let r = stats.report();
        assert_eq!(r.shipped, 6234, "{r:?}");
        assert!(r.batches >= 7 && r.batches < 6234, "{r:?}");
        assert_exact(
            &stream_records(&server.url(), "db-1.example").await,
            &log,
            "db-1.example",
        );
        // The message ids name host, incarnation and index.
        let (nats, _) = Nats::connect(&opts(&server.url())).await.unwrap();
        let m = nats.stream().get_raw_message(1).await.unwrap();
        let id = m
            .headers
            .get(weir_ship::nats::ID_HEADER)
            .map(|v| v.as_str().to_owned());
        assert_eq!(id, Some(format!("db-1%2Eexample:{}:1", log.incarnation())));
    });
    // The consumer cursor followed the broker.
    let c = log.consumer_list();
    let ship = c
        .iter()
        .find(|c| c.name == "ship-nats")
        .expect("the shipper's consumer");
    assert_eq!(ship.cleared, log.last_index());
}
