//! Shipping to a real Apache Kafka (KRaft, one node): every record once,
//! in order, through shipper aborts mid-transaction and broker crashes;
//! the host's position as Kafka's own tools see it; a second shipper of
//! the same host fenced; a topic that cannot hold the records refused;
//! TLS; a network cut; and the fleet read back.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use support::NetNs;
use support::kafka::KafkaBroker;
use support::records::{
    Lcg, append, appender, assert_exact, cut_three_times, kept_log, rt, ship, until_acked,
};
use weir_log::{Log, TypeMask};
use weir_ship::Error;
use weir_ship::fleet::{self, HostGlob, TailOptions};
use weir_ship::kafka::{Kafka, KafkaOptions};
use weir_ship::wire::{self, Shipped};

fn opts(brokers: &str) -> KafkaOptions {
    let mut o = KafkaOptions::new(brokers);
    o.timeout = Duration::from_secs(5);
    o.partitions = 3;
    o
}

/// Every record of the topic for `host` that a `read_committed` reader
/// sees, in its order.
async fn topic_records(o: &KafkaOptions, host: &str) -> Vec<Shipped> {
    let (k, _) = Kafka::connect(o).await.unwrap();
    let mut out = Vec::new();
    fleet::kafka::tail(
        &k,
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
fn ships_every_record_once_with_its_position_and_the_fleet_reads_back() {
    let Some(broker) = KafkaBroker::start() else {
        return;
    };
    let o = opts(&broker.brokers());
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    append(&log, 3000);
    rt().block_on(async {
        let (stop, task, stats) = ship(&log, o.clone(), "db-1.example");
        until_acked(&stats, 3000, Duration::from_secs(60)).await;
        // Records that arrive while it ships go out in their own batches.
        append(&log, 2000);
        until_acked(&stats, 5000, Duration::from_secs(60)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert!(stats.report().batches >= 2, "{:?}", stats.report());

        let got = topic_records(&o, "db-1.example").await;
        assert_exact(&got, &log, "db-1.example");

        let (k, _) = Kafka::connect(&o).await.unwrap();
        let hosts = fleet::kafka::status(&k).await.unwrap();
        assert_eq!(hosts.len(), 1, "{hosts:?}");
        let h = &hosts[0];
        assert_eq!(
            (h.host.as_str(), h.last_index, h.lag),
            ("db-1.example", 5000, Some(0))
        );
        assert_eq!(h.incarnation, log.incarnation().to_string());
        assert_eq!((h.records, h.last_time), (None, None));
    });

    // Kafka's own view: every record under the host's key in one
    // partition, with its id and type in headers, and the host's group
    // at the end of it, its metadata naming the last record.
    let token = wire::host_token("db-1.example");
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker.brokers())
        .set("group.id", weir_ship::kafka::group(&token))
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..3 {
        tpl.add_partition("weir", p);
    }
    let committed = c.committed_offsets(tpl, Duration::from_secs(10)).unwrap();
    let set: Vec<_> = committed
        .elements()
        .into_iter()
        .filter(|e| matches!(e.offset(), Offset::Offset(_)))
        .map(|e| (e.partition(), e.offset(), e.metadata().to_owned()))
        .collect();
    assert_eq!(set.len(), 1, "{set:?}");
    let (partition, Offset::Offset(end), meta) = set[0].clone() else {
        unreachable!()
    };
    assert_eq!(meta, wire::commit_position(log.incarnation(), 5000));
    let (_, high) = c
        .fetch_watermarks("weir", partition, Duration::from_secs(10))
        .unwrap();
    // The last transaction's marker follows its last record.
    assert_eq!(end + 1, high);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("weir", partition, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let m = loop {
        if let Some(m) = c.poll(Duration::from_secs(10)) {
            break m.unwrap().detach();
        }
    };
    assert_eq!(m.key(), Some(token.as_bytes()));
    let headers = m.headers().unwrap();
    let header = |name: &str| {
        headers
            .iter()
            .find(|h| h.key == name)
            .and_then(|h| h.value)
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
    };
    assert_eq!(
        header(weir_ship::nats::ID_HEADER),
        Some(wire::message_id(&token, log.incarnation(), 1))
    );
    let first = wire::decode(m.payload().unwrap()).unwrap();
    assert_eq!(
        header(weir_ship::kafka::TYPE_HEADER),
        Some(first.record.kind.to_string())
    );
}

/// TLS, set through the client's properties: records shipped to the TLS
/// listener, verified against the broker's certificate, arrive exactly;
/// a client that does not trust that certificate gets nowhere.
#[test]
fn ships_over_tls_and_a_client_without_the_certificate_is_refused() {
    let Some(broker) = KafkaBroker::start_tls() else {
        return;
    };
    let mut o = opts(&broker.tls_brokers());
    o.properties = vec![
        ("security.protocol".into(), "ssl".into()),
        ("ssl.ca.location".into(), broker.ca().display().to_string()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    append(&log, 1000);
    rt().block_on(async {
        let (stop, task, stats) = ship(&log, o.clone(), "tls-1");
        until_acked(&stats, 1000, Duration::from_secs(60)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_exact(&topic_records(&o, "tls-1").await, &log, "tls-1");

        // The system's certificates do not include the test's own.
        let mut untrusting = o.clone();
        untrusting.properties.truncate(1);
        untrusting.timeout = Duration::from_secs(3);
        let refused = Kafka::connect(&untrusting).await;
        assert!(refused.is_err(), "connected without trusting the broker");
        // Nor does plaintext reach the TLS listener.
        let mut plain = o.clone();
        plain.properties.clear();
        plain.timeout = Duration::from_secs(3);
        assert!(Kafka::connect(&plain).await.is_err());
    });
}

/// The broker in a network namespace of the test's own, its link downed
/// three times while records flow: packets vanish with no reset, so the
/// shipper learns of each cut from a timeout, mid-transaction or between
/// two. It backs off, reconnects (fencing its own transaction left open)
/// once the link is back, and the topic ends exact.
#[test]
fn a_network_cut_and_restored_loses_and_repeats_nothing() {
    let Some(net) = NetNs::new() else {
        return;
    };
    let Some(broker) = KafkaBroker::start_in(&net.inner_addr(), net.holder_pid()) else {
        return;
    };
    let o = opts(&broker.brokers());
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    let host = "cut-off";
    append(&log, 2000);
    rt().block_on(async {
        let (stop, task, stats) = ship(&log, o.clone(), host);
        until_acked(&stats, 2000, Duration::from_secs(60)).await;
        // Long enough for the step in flight to time out (5 s).
        cut_three_times(&net, &log, &stats, Duration::from_secs(30)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(log.last_index(), 22_000);
        assert_exact(&topic_records(&o, host).await, &log, host);
    });
}

#[test]
fn aborted_shippers_and_a_crashing_broker_lose_and_repeat_nothing() {
    let Some(mut broker) = KafkaBroker::start() else {
        return;
    };
    let o = opts(&broker.brokers());
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    let host = "crashy";
    let writer = appender(&log, 20_000);
    let mut rng = Lcg(0x5eed);
    rt().block_on(async {
        for round in 0..15 {
            let (_stop, task, _) = ship(&log, o.clone(), host);
            tokio::time::sleep(Duration::from_millis(300 + rng.below(700))).await;
            // A shipper stopped at whatever await it is in, mid-
            // transaction included, as a SIGKILL leaves the broker: the
            // next one's init_transactions aborts what it left open.
            task.abort();
            let _ = task.await;
            // Five broker crashes, each with a shipper mid-stream.
            if round % 3 == 1 {
                let (_stop, task, _) = ship(&log, o.clone(), host);
                tokio::time::sleep(Duration::from_millis(rng.below(500))).await;
                broker.kill();
                tokio::time::sleep(Duration::from_millis(rng.below(500))).await;
                broker.restart();
                tokio::time::sleep(Duration::from_millis(rng.below(1000))).await;
                task.abort();
                let _ = task.await;
            }
        }
        writer.join().unwrap();
        let (stop, task, stats) = ship(&log, o.clone(), host);
        until_acked(&stats, log.last_index(), Duration::from_secs(180)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(log.last_index(), 20_000);
        assert_exact(&topic_records(&o, host).await, &log, host);
    });
}

/// A session whose task is aborted while its producer waits in
/// `init_transactions` leaves that blocking call running: it must not
/// finish after the next session's and fence it. The link to the broker
/// is down when the first session starts, so its connection waits for
/// the kernel's next SYN, seconds after the link is back; the next
/// session starts as soon as it is.
#[test]
fn a_session_aborted_in_its_init_does_not_fence_the_next() {
    let Some(net) = NetNs::new() else {
        return;
    };
    let Some(broker) = KafkaBroker::start_in(&net.inner_addr(), net.holder_pid()) else {
        return;
    };
    let mut o = opts(&broker.brokers());
    o.timeout = Duration::from_secs(15);
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    let host = "abandoned";
    append(&log, 1000);
    rt().block_on(async {
        let (k, _) = Kafka::connect(&o).await.unwrap();
        net.cut();
        let early = k.clone();
        let task = tokio::spawn(async move { early.session(host).await.map(drop) });
        tokio::time::sleep(Duration::from_millis(500)).await;
        task.abort();
        let _ = task.await;
        // SYNs go at 0, 1 and 3 s: the next is at 7 s.
        tokio::time::sleep(Duration::from_millis(3500)).await;
        net.restore();
        let (stop, task, stats) = ship(&log, o.clone(), host);
        until_acked(&stats, 1000, Duration::from_secs(60)).await;
        // Past the abandoned call's timeout, a fenced shipper learns it
        // at its next transaction.
        tokio::time::sleep(Duration::from_secs(16)).await;
        append(&log, 1000);
        until_acked(&stats, 2000, Duration::from_secs(60)).await;
        stop.send(true).unwrap();
        task.await.unwrap().unwrap();
        assert_exact(&topic_records(&o, host).await, &log, host);
    });
}

#[test]
fn a_second_shipper_of_a_host_fences_the_first_and_unfit_topics_are_refused() {
    let Some(broker) = KafkaBroker::start() else {
        return;
    };
    let o = opts(&broker.brokers());
    let dir = tempfile::tempdir().unwrap();
    let log = kept_log(dir.path());
    append(&log, 1000);
    rt().block_on(async {
        let (_stop_a, task_a, stats_a) = ship(&log, o.clone(), "twin");
        until_acked(&stats_a, 1000, Duration::from_secs(60)).await;
        let (stop_b, task_b, stats_b) = ship(&log, o.clone(), "twin");
        until_acked(&stats_b, 1000, Duration::from_secs(60)).await;
        // The first learns it was fenced at its next transaction.
        append(&log, 1000);
        let a = tokio::time::timeout(Duration::from_secs(60), task_a)
            .await
            .expect("the fenced shipper stops")
            .unwrap();
        assert!(matches!(a, Err(Error::Fenced { .. })), "{a:?}");
        until_acked(&stats_b, 2000, Duration::from_secs(60)).await;
        stop_b.send(true).unwrap();
        task_b.await.unwrap().unwrap();
        assert_exact(&topic_records(&o, "twin").await, &log, "twin");

        // A compacted records' topic would keep one record per host.
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", broker.brokers())
            .create()
            .unwrap();
        let t = NewTopic::new("compacted", 1, TopicReplication::Fixed(1))
            .set("cleanup.policy", "compact");
        let made = admin
            .create_topics([&t], &AdminOptions::new())
            .await
            .unwrap();
        assert!(made[0].is_ok(), "{made:?}");
        let mut bad = o.clone();
        bad.topic = "compacted".into();
        let (_stop, task, _) = ship(&log, bad, "twin");
        let r = tokio::time::timeout(Duration::from_secs(60), task)
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(r, Err(Error::TopicUnfit { .. })), "{r:?}");
    });
}

#[test]
fn a_hundred_hosts_ship_at_once_and_the_fleet_reads_back_every_record() {
    let Some(broker) = KafkaBroker::start() else {
        return;
    };
    let o = opts(&broker.brokers());
    let dirs: Vec<tempfile::TempDir> = (0..100).map(|_| tempfile::tempdir().unwrap()).collect();
    let logs: Vec<Arc<Log>> = dirs.iter().map(|d| kept_log(d.path())).collect();
    for (i, log) in logs.iter().enumerate() {
        append(log, 50 + i as u64);
    }
    rt().block_on(async {
        // The topics exist before a hundred shippers race to make them.
        Kafka::connect(&o).await.unwrap();
        let shippers: Vec<_> = logs
            .iter()
            .enumerate()
            .map(|(i, log)| ship(log, o.clone(), &format!("host-{i:03}.fleet")))
            .collect();
        for (i, (_, _, stats)) in shippers.iter().enumerate() {
            until_acked(stats, logs[i].last_index(), Duration::from_secs(180)).await;
        }
        for (stop, task, _) in shippers {
            stop.send(true).unwrap();
            task.await.unwrap().unwrap();
        }
        let (k, _) = Kafka::connect(&o).await.unwrap();
        let mut seen = std::collections::BTreeMap::<String, Vec<Shipped>>::new();
        let all = TailOptions {
            hosts: None,
            mask: TypeMask::all(),
            follow: false,
        };
        let n = fleet::kafka::tail(&k, &all, |s| {
            seen.entry(s.host.clone()).or_default().push(s.clone());
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(n, (0..100).map(|i| 50 + i).sum::<u64>());
        assert_eq!(seen.len(), 100);
        for (i, log) in logs.iter().enumerate() {
            let host = format!("host-{i:03}.fleet");
            assert_exact(&seen[&host], log, &host);
        }
        let hosts = fleet::kafka::status(&k).await.unwrap();
        assert_eq!(hosts.len(), 100);
        for (i, h) in hosts.iter().enumerate() {
            assert_eq!(h.host, format!("host-{i:03}.fleet"));
            assert_eq!((h.last_index, h.lag), (50 + i as u64, Some(0)));
        }
    });
}
