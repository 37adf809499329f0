//! Shipping to a real nats-server: every record once, in order, through
//! shipper aborts, broker crashes and restarts, new incarnations and
//! retention's evictions; and the fleet read back.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use support::records::{
    Lcg, Running, append, appender, assert_exact, cut_three_times, kept_log, log_records, rt, ship,
    until_acked,
};
use support::{NatsServer, NetNs};
use weir_log::{Log, Options, RecordType, TypeMask};
use weir_ship::fleet::{self, HostGlob, TailOptions};
use weir_ship::nats::{Nats, NatsOptions};
use weir_ship::wire::Shipped;

fn opts(url: &str) -> NatsOptions {
    let mut o = NatsOptions::new(url);
    o.timeout = Duration::from_secs(2);
    o
}

/// Starts a shipper to the server at `url`.
fn spawn(log: &Arc<Log>, url: &str, host: &str) -> Running {
    ship(log, opts(url), host)
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

#[test]
fn ships_every_record_once_in_order() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
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

#[test]
fn aborted_shippers_and_a_crashing_broker_lose_and_repeat_nothing() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    let host = "crashy";
    let writer = appender(&log, 30_000);
    let mut rng = Lcg(0x5eed);
    rt().block_on(async {
        for round in 0..25 {
            let (_stop, task, _) = spawn(&log, &server.url(), host);
            tokio::time::sleep(Duration::from_millis(20 + rng.below(150))).await;
            // A shipper stopped at whatever await it is in, mid-batch
            // included: as a SIGKILL leaves the broker.
            task.abort();
            let _ = task.await;
            if round % 5 == 2 {
                server.kill();
                let (_stop, task, _) = spawn(&log, &server.url(), host);
                tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
                server.restart();
                tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
                task.abort();
                let _ = task.await;
            }
        }
        writer.join().unwrap();
        let (stop, task, stats) = spawn(&log, &server.url(), host);
        until_acked(&stats, log.last_index(), Duration::from_secs(120)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(log.last_index(), 30_000);
        assert_exact(&stream_records(&server.url(), host).await, &log, host);
    });
}

/// The broker in a network namespace of the test's own, its link downed
/// three times while records flow: packets vanish with no reset, so the
/// shipper learns of each cut from a timeout. It backs off, reconnects
/// once the link is back, and the stream ends exact.
#[test]
fn a_network_cut_and_restored_loses_and_repeats_nothing() {
    let Some(net) = NetNs::new() else {
        return;
    };
    let Some(server) = NatsServer::start_in(&net) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    let host = "cut-off";
    append(&log, 2000);
    rt().block_on(async {
        let (stop, task, stats) = spawn(&log, &server.url(), host);
        until_acked(&stats, 2000, Duration::from_secs(60)).await;
        // Long enough for the publish in flight to time out (2 s).
        cut_three_times(&net, &log, &stats, Duration::from_secs(20)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(log.last_index(), 22_000);
        assert_exact(&stream_records(&server.url(), host).await, &log, host);
    });
}

#[test]
fn a_broker_down_at_start_is_retried_and_shown() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    server.kill();
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    append(&log, 300);
    rt().block_on(async {
        let (stop, task, stats) = spawn(&log, &server.url(), "late");
        let deadline = Instant::now() + Duration::from_secs(20);
        while stats.report().retries < 2 {
            assert!(
                Instant::now() < deadline,
                "no retries: {:?}",
                stats.report()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let r = stats.report();
        assert_eq!(r.state, weir_ship::ShipState::Retrying, "{r:?}");
        assert!(
            r.last_error
                .as_deref()
                .is_some_and(|e| e.contains("connect")),
            "{r:?}"
        );
        assert_eq!((r.shipped, r.acked_index), (0, 0));
        server.restart();
        until_acked(&stats, 300, Duration::from_secs(30)).await;
        assert_eq!(stats.report().last_error, None);
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_exact(&stream_records(&server.url(), "late").await, &log, "late");
    });
}

#[test]
fn a_new_incarnation_of_a_host_starts_its_own_history() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let first = tempfile::tempdir().unwrap();
    let old = kept_log(first.path());
    append(&old, 500);
    let second = tempfile::tempdir().unwrap();
    let new = kept_log(second.path());
    append(&new, 200);
    assert_ne!(old.incarnation(), new.incarnation());
    rt().block_on(async {
        for log in [&old, &new] {
            let (stop, task, stats) = spawn(log, &server.url(), "reborn");
            until_acked(&stats, log.last_index(), Duration::from_secs(30)).await;
            stop.send(true).unwrap();
            task.await.unwrap().unwrap();
        }
        let all = stream_records(&server.url(), "reborn").await;
        assert_eq!(all.len(), 700);
        let (a, b) = all.split_at(500);
        assert_exact(a, &old, "reborn");
        assert_exact(b, &new, "reborn");
        // The old history is not taken for the new one's: a shipper of
        // the old log again finds the new history last and, its
        // incarnation differing, ships its own from the start.
        let (nats, _) = Nats::connect(&opts(&server.url())).await.unwrap();
        let hosts = fleet::status(&nats).await.unwrap();
        assert_eq!(hosts.len(), 1);
        assert_eq!(hosts[0].incarnation, new.incarnation().to_string());
        assert_eq!((hosts[0].last_index, hosts[0].records), (200, Some(700)));
        assert_eq!(hosts[0].lag, Some(0));
    });
}

#[test]
fn a_sink_evicted_by_retention_resumes_after_a_reported_gap() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A size limit the records of a long outage overflow: the sink, the
    // one consumer, is evicted (most idle first), then old segments go.
    let retention = weir_log::Retention {
        max_bytes: 512 * 1024,
        ..weir_log::Retention::default()
    };
    let o = Options::default()
        .segment_size(64 * 1024)
        .retention(retention);
    let log = Arc::new(Log::open(dir.path(), o).unwrap());
    append(&log, 1000);
    rt().block_on(async {
        let (stop, task, stats) = spawn(&log, &server.url(), "laggard");
        until_acked(&stats, 1000, Duration::from_secs(30)).await;
        server.kill();
        // The broker is down far longer than retention waits for a sink.
        // The log announces the eviction with a MARK, read here while
        // it is among the newest records.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut mark = None;
        while mark.is_none() {
            assert!(
                Instant::now() < deadline,
                "the sink was not evicted: {:?}",
                log.consumer_list()
            );
            append(&log, 500);
            if !log.consumer_list().iter().any(|c| c.name == "ship-nats") {
                mark = log
                    .reader(log.first_index())
                    .with_mask(TypeMask::parse("MARK").unwrap())
                    .filter_map(Result::ok)
                    .find(|r| r.name == b"consumer-evicted ship-nats");
            }
        }
        let mark = mark.unwrap();
        assert_eq!(mark.kind, RecordType::MARK);
        assert!(mark.field("reason").is_some(), "{mark:?}");
        // Then far more than the log holds (about 5,000 of these), so
        // that records the shipper never read are gone.
        append(&log, 10_000);
        server.restart();
        until_acked(&stats, log.last_index(), Duration::from_secs(60)).await;
        let r = stats.report();
        assert!(r.gap_records > 0, "no gap reported: {r:?}");
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        // The consumer is back. The stream holds every index once, in
        // order, but the gap's: 1..=1000, what the shipper had read
        // before the log dropped it, and everything from the log's
        // oldest record on.
        assert!(log.consumer_list().iter().any(|c| c.name == "ship-nats"));
        let got: Vec<u64> = stream_records(&server.url(), "laggard")
            .await
            .iter()
            .map(|s| s.record.index)
            .collect();
        assert!(
            got.windows(2).all(|w| w[0] < w[1]),
            "out of order or repeated"
        );
        assert!(got.starts_with(&(1..=1000).collect::<Vec<_>>()));
        // Retention may go on deleting after the eviction; what is left
        // is all in the stream.
        let first = log.first_index();
        assert!(got.ends_with(&(first..=log.last_index()).collect::<Vec<_>>()));
        let missing = log.last_index() - got.len() as u64;
        let runs = got.iter().fold(Vec::<(u64, u64)>::new(), |mut v, &i| {
            match v.last_mut() {
                Some(r) if r.1 + 1 == i => r.1 = i,
                _ => v.push((i, i)),
            }
            v
        });
        assert_eq!(
            missing, r.gap_records,
            "the gap reported is not the gap in the stream: runs {runs:?}, first {first}"
        );
    });
}

#[test]
fn a_hundred_hosts_ship_at_once_and_the_fleet_reads_back_every_record() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let dirs: Vec<tempfile::TempDir> = (0..100).map(|_| tempfile::tempdir().unwrap()).collect();
    let logs: Vec<Arc<Log>> = dirs.iter().map(|d| kept_log(d.path())).collect();
    for (i, log) in logs.iter().enumerate() {
        append(log, 50 + i as u64);
    }
    rt().block_on(async {
        let shippers: Vec<_> = logs
            .iter()
            .enumerate()
            .map(|(i, log)| spawn(log, &server.url(), &format!("host-{i:03}.fleet")))
            .collect();
        for (i, (_, _, stats)) in shippers.iter().enumerate() {
            until_acked(stats, logs[i].last_index(), Duration::from_secs(120)).await;
        }
        for (stop, task, _) in shippers {
            stop.send(true).unwrap();
            task.await.unwrap().unwrap();
        }
        let (nats, _) = Nats::connect(&opts(&server.url())).await.unwrap();
        let mut seen = std::collections::BTreeMap::<String, Vec<Shipped>>::new();
        let n = fleet::tail(
            &nats,
            &TailOptions {
                hosts: None,
                mask: TypeMask::all(),
                follow: false,
            },
            |s| {
                seen.entry(s.host.clone()).or_default().push(s.clone());
                Ok(())
            },
        )
        .await
        .unwrap();
        assert_eq!(n, (0..100).map(|i| 50 + i).sum::<u64>());
        assert_eq!(seen.len(), 100);
        for (i, log) in logs.iter().enumerate() {
            let host = format!("host-{i:03}.fleet");
            assert_exact(&seen[&host], log, &host);
        }
        let hosts = fleet::status(&nats).await.unwrap();
        assert_eq!(hosts.len(), 100);
        for (i, h) in hosts.iter().enumerate() {
            assert_eq!(h.host, format!("host-{i:03}.fleet"));
            assert_eq!(
                (h.last_index, h.records, h.lag),
                (50 + i as u64, Some(50 + i as u64), Some(0))
            );
        }
        // A glob and a mask select on the reader's side.
        let mut only = 0;
        fleet::tail(
            &nats,
            &TailOptions {
                hosts: Some(HostGlob::new("host-00?.fleet")),
                mask: TypeMask::parse("CREAT").unwrap(),
                follow: false,
            },
            |s| {
                assert!(s.host.starts_with("host-00") && s.record.kind == RecordType::CREAT);
                only += 1;
                Ok(())
            },
        )
        .await
        .unwrap();
        let want: usize = logs[..10]
            .iter()
            .map(|l| {
                log_records(l)
                    .iter()
                    .filter(|r| r.kind == RecordType::CREAT)
                    .count()
            })
            .sum();
        assert_eq!(only, want as u64);
    });
}
