//! Follow streams: many followers while several threads append see every
//! record exactly once and in order, including those committed before
//! they started; a consumer's follower sees only its types after its
//! cleared index; and a stopping server ends its follow streams and lets
//! go of the state.

mod api_support;

use std::sync::Arc;
use std::time::Duration;

use api_support::{Trackers, fixture, root};
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use tower::ServiceExt;
use weir_daemon::api::{Access, Limits};
use weir_log::{Record, RecordType};

/// Opens a follow stream and collects record indexes until it has seen
/// `upto` (or 30 s pass).
async fn follow(router: axum::Router, uri: String, upto: u64) -> Vec<serde_json::Value> {
    let mut req = Request::builder().uri(&uri).body(Body::empty()).unwrap();
    req.extensions_mut().insert(root());
    let res = router.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    let mut body = res.into_body();
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while got
        .last()
        .is_none_or(|v: &serde_json::Value| v["index"].as_u64().unwrap() < upto)
    {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .unwrap_or_else(|_| panic!("{uri}: stalled after {} records", got.len()))
            .expect("the stream ended early")
            .unwrap();
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.extend_from_slice(&data);
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            got.push(serde_json::from_slice(&line[..line.len() - 1]).unwrap());
        }
    }
    got
}

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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fx = fixture(Access::default(), Limits::default(), Trackers::None);
    let sock = fx.dir.path().join("api.sock");
    let listener = rt
        .block_on(async { tokio::net::UnixListener::bind(&sock) })
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = rt.spawn(weir_daemon::api::serve(listener, fx.state.clone(), async {
        let _ = stopped.await;
    }));
    api_support::append_marks(&fx.state.log, 3);
    let lines = rt.block_on(async {
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
        stop.send(()).unwrap();
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
    rt.block_on(server).unwrap().unwrap();
    // The server and its notifier hold nothing: the log can be taken back.
    let state = Arc::try_unwrap(fx.state)
        .ok()
        .expect("serve let go of the state");
    let log = Arc::try_unwrap(state.log).expect("nothing else holds the log");
    log.close().unwrap();
}
