//! Follow streams: many followers while several threads append see every
//! record exactly once and in order, including those committed before
//! they started; a consumer's follower sees only its types after its
//! cleared index; followers that start before the notifier's shared
//! window (reading the log themselves, then switching), inside it or at
//! its end, masked or not, see exactly what a direct read sees; a stalled
//! follower holds nobody back and, once read again after the window moved
//! past it, still gets every record once; and a stopping server ends its
//! follow streams and lets go of the state.

mod api_support;

use std::sync::Arc;
use std::time::Duration;

use api_support::{Trackers, fixture, root};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;
use weir_daemon::api::{Access, Limits};
use weir_log::{Record, RecordType, TypeMask};

/// An open follow stream and the records read from it so far.
struct Follower {
    uri: String,
    body: Body,
    buf: Vec<u8>,
    got: Vec<serde_json::Value>,
}

impl Follower {
    async fn open(router: axum::Router, uri: String) -> Follower {
        let mut req = Request::builder().uri(&uri).body(Body::empty()).unwrap();
        req.extensions_mut().insert(root());
        let res = router.oneshot(req).await.unwrap();
        assert_eq!(res.status(), 200, "{uri}");
        Follower {
            uri,
            body: res.into_body(),
            buf: Vec::new(),
            got: Vec::new(),
        }
    }

    /// Reads until a record at or past `upto` (or 30 s pass).
    async fn read_until(&mut self, upto: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while self
            .got
            .last()
            .is_none_or(|v: &serde_json::Value| v["index"].as_u64().unwrap() < upto)
        {
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .unwrap_or_else(|_| {
                    panic!("{}: stalled after {} records", self.uri, self.got.len())
                })
                .expect("the stream ended early")
                .unwrap();
            let Ok(data) = frame.into_data() else {
                continue;
            };
            self.buf.extend_from_slice(&data);
            while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=nl).collect();
                self.got
                    .push(serde_json::from_slice(&line[..line.len() - 1]).unwrap());
            }
        }
    }

    fn indexes(&self) -> Vec<u64> {
        self.got
            .iter()
            .map(|v| v["index"].as_u64().unwrap())
            .collect()
    }
}

/// Opens a follow stream and collects records until it has seen `upto`.
async fn follow(router: axum::Router, uri: String, upto: u64) -> Vec<serde_json::Value> {
    let mut f = Follower::open(router, uri).await;
    f.read_until(upto).await;
    f.got
}

/// The type of the record at `index` in the mixed runs below.
fn kind_of(index: u64) -> RecordType {
    [RecordType::MARK, RecordType::CREAT, RecordType::MKDIR][usize::try_from(index % 3).unwrap()]
}

/// Appends records `from..=upto` (the caller is the only writer), their
/// types cycling by index, with names long enough that the byte bound of
/// the window matters too.
fn append_mixed(log: &weir_log::Log, from: u64, upto: u64) {
    for i in from..=upto {
        let name = format!("{i:0>400}");
        let a = log
            .append(&Record::new(kind_of(i)).name(name.as_bytes()))
            .unwrap();
        assert_eq!(a.index(), i);
    }
}

/// The indexes a stream from `from` through `mask` must show, read
/// straight from the log.
fn want(log: &weir_log::Log, from: u64, mask: Option<&str>) -> Vec<u64> {
    let mut r = log.reader(from);
    if let Some(m) = mask {
        r = r.with_mask(TypeMask::parse(m).unwrap());
    }
    r.map(|r| r.unwrap().index).collect()
}

/// Compares index lists, naming the first difference (not printing
/// tens of thousands of numbers).
fn assert_same(got: &[u64], want: &[u64], what: &str) {
    if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: at {i}, got {:?}, want {:?}",
            &got[i.saturating_sub(2)..(i + 3).min(got.len())],
            &want[i.saturating_sub(2)..(i + 3).min(want.len())]
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: as many records");
}

/// More records than the notifier's window keeps (8192 records or 8 MiB):
/// what is written before the streams in the tests below, so that the
/// oldest records are no longer in the window.
const PAST_THE_WINDOW: u64 = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_followers_see_every_record_once_in_order() {
    const WRITERS: u64 = 4;
    const PER_WRITER: u64 = 1000;
    const FOLLOWERS: usize = 100;
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    let router = weir_daemon::api::router(fx.state.clone());
    // Some records before anyone follows.
    api_support::append_marks(&fx.state.log, 100);
    api_support::wait_committed(&fx.state.log, 100);
    let total = 100 + WRITERS * PER_WRITER;
    let mut followers = Vec::new();
    for i in 0..FOLLOWERS {
        // Half start at the oldest record, half in the middle.
        let uri = if i % 2 == 0 {
            "/v1/log/records?follow=true".to_owned()
        } else {
            "/v1/log/records?follow=true&from=51".to_owned()
        };
        followers.push(tokio::spawn(follow(router.clone(), uri, total)));
    }
    let log = fx.state.log.clone();
    let writers = tokio::task::spawn_blocking(move || {
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let log = &log;
                s.spawn(move || {
                    for k in 0..PER_WRITER {
                        let name = format!("{w}/{k}");
                        let _ = log
                            .append(&Record::new(RecordType::CREAT).name(name.as_bytes()))
                            .unwrap();
                        if k % 100 == 0 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                });
            }
        });
    });
    writers.await.unwrap();
    for (i, f) in followers.into_iter().enumerate() {
        let got = f.await.unwrap();
        let first = if i % 2 == 0 { 1 } else { 51 };
        let idx: Vec<u64> = got.iter().map(|v| v["index"].as_u64().unwrap()).collect();
        let want: Vec<u64> = (first..=total).collect();
        assert_eq!(idx, want, "follower {i}");
        // Each writer's records in its own order.
        for w in 0..WRITERS {
            let mine: Vec<String> = got
                .iter()
                .filter_map(|v| v["name"].as_str())
                .filter(|n| n.starts_with(&format!("{w}/")))
                .map(str::to_owned)
                .collect();
            let want: Vec<String> = (0..PER_WRITER).map(|k| format!("{w}/{k}")).collect();
            assert_eq!(mine, want, "follower {i}, writer {w}");
        }
    }
    // Every stream is gone: the follower count is back to 0.
    let m = api_support::as_root(&router, "GET", "/metrics", "").await;
    assert!(
        m.text().contains("\nweir_api_followers 0\n"),
        "{}",
        m.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_follows_its_types_after_its_cleared_index() {
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    let router = weir_daemon::api::router(fx.state.clone());
    let log = &fx.state.log;
    api_support::append_marks(log, 10);
    api_support::wait_committed(log, 10);
    log.register("c", weir_log::TypeMask::parse("all,-MARK").unwrap())
        .unwrap();
    let f = tokio::spawn(follow(
        router.clone(),
        "/v1/log/records?follow=true&consumer=c&mask=all,-MKDIR".to_owned(),
        // The last CREAT: k = 28.
        39,
    ));
    for k in 0..30u32 {
        let kind = [RecordType::MARK, RecordType::CREAT, RecordType::MKDIR][k as usize % 3];
        let _ = log.append(&Record::new(kind)).unwrap();
    }
    let got = f.await.unwrap();
    let idx: Vec<u64> = got.iter().map(|v| v["index"].as_u64().unwrap()).collect();
    // Records 11..=40: CREAT at k % 3 == 1, the only type both masks take.
    let want: Vec<u64> = (0..30u64).filter(|k| k % 3 == 1).map(|k| 11 + k).collect();
    assert_eq!(idx, want);
    assert!(got.iter().all(|v| v["type"] == "CREAT"));
}

#[test]
fn stopping_the_server_ends_follow_streams_and_releases_the_state() {
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    let served = api_support::Served::start(&fx);
    let sock = served.sock.clone();
    api_support::append_marks(&fx.state.log, 3);
    let lines = served.rt.block_on(async {
        // A raw HTTP/1.1 follower on the socket.
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::UnixStream::connect(&sock).await.unwrap();
        s.write_all(b"GET /v1/log/records?follow=true HTTP/1.1\r\nHost: weir\r\n\r\n")
            .await
            .unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Until the three records are in.
        while !String::from_utf8_lossy(&seen).contains("\"index\":3") {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed early");
            seen.extend_from_slice(&buf[..n]);
        }
        served.stop();
        // The stream ends: the chunked body's last chunk, then EOF.
        let read_all = async {
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
            }
        };
        tokio::time::timeout(Duration::from_secs(4), read_all)
            .await
            .expect("the follow stream ends when the server stops");
        String::from_utf8(seen).unwrap()
    });
    assert!(lines.starts_with("HTTP/1.1 200"), "{lines}");
    assert!(
        lines.ends_with("0\r\n\r\n"),
        "a clean end of the body: {lines:?}"
    );
    served.join();
    // The server and its notifier hold nothing: the log can be taken back.
    let state = Arc::try_unwrap(fx.state)
        .ok()
        .expect("serve let go of the state");
    let log = Arc::try_unwrap(state.log).expect("nothing else holds the log");
    log.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn followers_before_inside_and_at_the_end_of_the_window_see_every_record_once() {
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    let router = weir_daemon::api::router(fx.state.clone());
    let log = fx.state.log.clone();
    // Registered first: a consumer's cleared index keeps the log's oldest
    // records from being collected.
    log.register("c", TypeMask::parse("CREAT,MKDIR").unwrap())
        .unwrap();
    append_mixed(&log, 1, PAST_THE_WINDOW);
    api_support::wait_committed(&log, PAST_THE_WINDOW);
    let total = PAST_THE_WINDOW + 5000;
    // (query, first index, mask the stream applies)
    let cases: Vec<(String, u64, Option<&str>)> = vec![
        // Before the window: they read the log themselves, then switch.
        ("from=1".into(), 1, None),
        ("from=1&mask=CREAT".into(), 1, Some("CREAT")),
        ("mask=MKDIR,MARK".into(), 1, Some("MKDIR,MARK")),
        ("consumer=c".into(), 1, Some("CREAT,MKDIR")),
        // Inside it.
        (
            format!("from={}", PAST_THE_WINDOW - 100),
            PAST_THE_WINDOW - 100,
            None,
        ),
        // At its end (or past it, if the notifier is still reading).
        (
            format!("from={}", PAST_THE_WINDOW + 1),
            PAST_THE_WINDOW + 1,
            None,
        ),
        (
            format!("from={}&mask=CREAT", PAST_THE_WINDOW + 1),
            PAST_THE_WINDOW + 1,
            Some("CREAT"),
        ),
    ];
    let writer = {
        let log = log.clone();
        tokio::task::spawn_blocking(move || {
            for k in 0..50 {
                append_mixed(
                    &log,
                    PAST_THE_WINDOW + k * 100 + 1,
                    PAST_THE_WINDOW + (k + 1) * 100,
                );
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let mut followers = Vec::new();
    for (q, _, mask) in &cases {
        // The last record this stream must show.
        let last = (total - 2..=total)
            .rev()
            .find(|&i| mask.is_none_or(|m| TypeMask::parse(m).unwrap().contains(kind_of(i))))
            .unwrap();
        followers.push(tokio::spawn(follow(
            router.clone(),
            format!("/v1/log/records?follow=true&{q}"),
            last,
        )));
    }
    writer.await.unwrap();
    for ((q, from, mask), f) in cases.iter().zip(followers) {
        let got: Vec<u64> = f
            .await
            .unwrap()
            .iter()
            .map(|v| v["index"].as_u64().unwrap())
            .collect();
        assert_same(&got, &want(&log, *from, *mask), q);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_follower_holds_nobody_back_and_later_gets_every_record_once() {
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    let router = weir_daemon::api::router(fx.state.clone());
    let log = fx.state.log.clone();
    append_mixed(&log, 1, 99);
    api_support::wait_committed(&log, 99);
    // Two streams read their first records, then nobody reads them.
    let mut stalled = Follower::open(router.clone(), "/v1/log/records?follow=true".into()).await;
    stalled.read_until(99).await;
    let mut stalled_masked = Follower::open(
        router.clone(),
        "/v1/log/records?follow=true&mask=MKDIR".into(),
    )
    .await;
    stalled_masked.read_until(98).await;
    // Others follow while the window moves far past the stalled ones.
    let total = 99 + PAST_THE_WINDOW;
    let others: Vec<_> = [("", None), ("&mask=CREAT", Some("CREAT"))]
        .into_iter()
        .map(|(q, mask): (&str, Option<&str>)| {
            let last = (total - 2..=total)
                .rev()
                .find(|&i| mask.is_none_or(|m| TypeMask::parse(m).unwrap().contains(kind_of(i))))
                .unwrap();
            tokio::spawn(follow(
                router.clone(),
                format!("/v1/log/records?follow=true&from=50{q}"),
                last,
            ))
        })
        .collect();
    let writer = {
        let log = log.clone();
        tokio::task::spawn_blocking(move || append_mixed(&log, 100, total))
    };
    writer.await.unwrap();
    for (f, mask) in others.into_iter().zip([None, Some("CREAT")]) {
        let got: Vec<u64> = f
            .await
            .unwrap()
            .iter()
            .map(|v| v["index"].as_u64().unwrap())
            .collect();
        assert_same(&got, &want(&log, 50, mask), "a follower read all along");
    }
    // Read again: every record once, in order, across the gap in time.
    stalled.read_until(total).await;
    assert_same(&stalled.indexes(), &want(&log, 1, None), "stalled");
    stalled_masked.read_until(total).await;
    assert_same(
        &stalled_masked.indexes(),
        &want(&log, 1, Some("MKDIR")),
        "stalled, masked",
    );
    // And they go on following from the window.
    append_mixed(&log, total + 1, total + 3);
    stalled.read_until(total + 3).await;
    assert_same(&stalled.indexes(), &want(&log, 1, None), "stalled, later");
}
