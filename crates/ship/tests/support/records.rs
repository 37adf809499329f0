//! The logs the shipping tests ship, and the checks of what arrived:
//! records appended as a host would, a log that keeps every record for
//! the comparison, and the comparison itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use weir_log::{Field, Log, LogRecord, Options, Record, RecordType, TypeMask};
use weir_ship::wire::Shipped;
use weir_ship::{ShipOptions, ShipStats, Shipper, Sink};

/// A running shipper's stop switch, task and counters.
pub type Running = (
    watch::Sender<bool>,
    tokio::task::JoinHandle<weir_ship::Result<()>>,
    Arc<ShipStats>,
);

/// Starts a shipper of `log` to `sink` as `host` on the runtime.
pub fn ship(log: &Arc<Log>, sink: impl Into<Sink>, host: &str) -> Running {
    let s = Shipper::new(log.clone(), sink, ShipOptions::new(host)).unwrap();
    let stats = s.stats();
    let (tx, rx) = watch::channel(false);
    (tx, tokio::spawn(s.run(rx)), stats)
}

pub const TYPES: [RecordType; 4] = [
    RecordType::CREAT,
    RecordType::UNLNK,
    RecordType::MARK,
    RecordType::RENME,
];

pub fn append(log: &Log, n: u64) {
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

pub async fn until_acked(stats: &weir_ship::ShipStats, last: u64, within: Duration) {
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

/// A log whose every record stays readable for the comparison at the
/// end: a consumer that never clears holds retention back.
pub fn kept_log(dir: &std::path::Path) -> Arc<Log> {
    let log = Log::open(dir, Options::default()).unwrap();
    log.register("test-keeps-all", TypeMask::all()).unwrap();
    Arc::new(log)
}

/// The log's records, whole.
pub fn log_records(log: &Log) -> Vec<LogRecord> {
    log.reader(1).map(|r| r.unwrap()).collect()
}

/// The stream holds the log's every record once, in order, byte for byte.
pub fn assert_exact(got: &[Shipped], log: &Log, host: &str) {
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

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Appends `n` records from a thread of its own, a few at a time, while
/// the test does its worst to the shipper and the broker.
pub fn appender(log: &Arc<Log>, n: u64) -> std::thread::JoinHandle<()> {
    let log = log.clone();
    std::thread::spawn(move || {
        let mut done = 0;
        while done < n {
            let k = 50.min(n - done);
            append(&log, k);
            done += k;
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// Appends 20,000 records while `net`'s link is cut three times, each
/// time until the shipper notices (its retries grow: the step in flight
/// timed out, within `notice`), then restored after a moment; returns
/// once the broker acknowledged the whole log, with no error left.
pub async fn cut_three_times(
    net: &super::NetNs,
    log: &Arc<Log>,
    stats: &ShipStats,
    notice: Duration,
) {
    let writer = appender(log, 20_000);
    let mut rng = Lcg(0xc07);
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100 + rng.below(400))).await;
        let before = stats.report().retries;
        net.cut();
        let deadline = Instant::now() + notice;
        while stats.report().retries == before {
            assert!(
                Instant::now() < deadline,
                "the cut went unnoticed: {:?}",
                stats.report()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.below(1500))).await;
        net.restore();
    }
    writer.join().unwrap();
    until_acked(stats, log.last_index(), Duration::from_secs(180)).await;
    let r = stats.report();
    assert!(r.retries >= 3, "{r:?}");
    assert_eq!(r.last_error, None, "{r:?}");
}

/// A small deterministic generator for the moments of the test's blows.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}
