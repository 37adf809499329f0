//! Hostile requests: each malformed one gets its 4xx and the JSON error
//! body, and the API keeps answering normal requests after it. Query
//! strings and bodies are also thrown at the parsers and the router at
//! random (proptest): never a panic, never a 5xx, always the error body.

mod api_support;

use api_support::{Answer, Trackers, as_root, call, fixture, fixture_with_log, root};
use axum::Router;
use proptest::prelude::*;
use weir_daemon::api::query::{DevicesQuery, MountsQuery, RecordsQuery, parse_pairs};
use weir_daemon::api::requests::{AppendRequest, ClearRequest, RegisterRequest, parse};
use weir_daemon::api::{Access, Limits};

async fn still_serving(router: &Router) {
    let a = as_root(router, "GET", "/v1/log/consumers", "").await;
    assert_eq!(a.status, 200, "{}", a.text());
    let a = as_root(
        router,
        "POST",
        "/v1/log/records",
        r#"{"records":[{"type":"MARK"}]}"#,
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text());
}

fn router(limits: Limits) -> (api_support::Fixture, Router) {
    let fx = fixture(Access::default(), limits, Trackers::None);
    let r = weir_daemon::api::router(fx.state.clone());
    (fx, r)
}

#[tokio::test]
async fn each_malformed_request_gets_its_4xx_and_the_daemon_keeps_serving() {
    let limits = Limits {
        max_body_bytes: 1024,
        max_followers: 4,
    };
    let (fx, r) = router(limits);
    api_support::append_marks(&fx.state.log, 3);
    api_support::wait_committed(&fx.state.log, 3);
    assert_eq!(
        as_root(&r, "POST", "/v1/log/consumers", r#"{"name":"c"}"#)
            .await
            .status,
        201
    );
    let huge = format!(
        r#"{{"records":[{{"type":"MARK","name":"{}"}}]}}"#,
        "x".repeat(2000)
    );
    let cases: Vec<(&str, String, String, u16, &str)> = vec![
        // Bad JSON, wrong types, unknown members.
        (
            "POST",
            "/v1/log/records".into(),
            "{".into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            "[]".into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            "".into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            "\u{0}\u{ff}".into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            r#"{"records":{"type":"MARK"}}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            r#"{"records":[{"type":true}]}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            r#"{"records":[{"type":"MARK","flags":65536}]}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            r#"{"records":[],"durable":"yes"}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            r#"{"records":[],"sync":true}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/records".into(),
            r#"{"records":[{"type":"MARK","fields":{"k":{"a":1}}}]}"#.into(),
            400,
            "bad_request",
        ),
        // Huge bodies.
        (
            "POST",
            "/v1/log/records".into(),
            huge.clone(),
            413,
            "payload_too_large",
        ),
        (
            "POST",
            "/v1/log/consumers".into(),
            huge.clone(),
            413,
            "payload_too_large",
        ),
        (
            "POST",
            "/v1/log/consumers/c/clear".into(),
            huge,
            413,
            "payload_too_large",
        ),
        // Consumers.
        (
            "POST",
            "/v1/log/consumers".into(),
            r#"{"name":""}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/consumers".into(),
            r#"{"name":"a/b"}"#.into(),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/v1/log/consumers".into(),
            r#"{"name":"c"}"#.into(),
            409,
            "consumer_exists",
        ),
        (
            "POST",
            "/v1/log/consumers".into(),
            r#"{"name":"d","mask":"all,-"}"#.into(),
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/log/consumers/nope".into(),
            "".into(),
            404,
            "unknown_consumer",
        ),
        (
            "DELETE",
            "/v1/log/consumers/nope".into(),
            "".into(),
            404,
            "unknown_consumer",
        ),
        (
            "POST",
            "/v1/log/consumers/nope/clear".into(),
            "".into(),
            404,
            "unknown_consumer",
        ),
        (
            "POST",
            "/v1/log/consumers/c/clear".into(),
            r#"{"index":1000}"#.into(),
            400,
            "bad_range",
        ),
        (
            "POST",
            "/v1/log/consumers/c/clear".into(),
            r#"{"index":1.5}"#.into(),
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/log/consumers/%ff".into(),
            "".into(),
            400,
            "bad_request",
        ),
        // Bad ranges and queries.
        (
            "GET",
            // Far past the end: the appends between cases must not reach it.
            "/v1/log/records?from=1000000000".into(),
            "".into(),
            400,
            "bad_range",
        ),
        (
            "GET",
            "/v1/log/records?from=18446744073709551615".into(),
            "".into(),
            400,
            "bad_range",
        ),
        (
            "GET",
            "/v1/log/records?from=1&from=2".into(),
            "".into(),
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/log/records?from=%zz".into(),
            "".into(),
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/log/records?follow=maybe".into(),
            "".into(),
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/log/records?limit=-3".into(),
            "".into(),
            400,
            "bad_request",
        ),
        (
            "GET",
            "/v1/log/records?consumer=nope".into(),
            "".into(),
            404,
            "unknown_consumer",
        ),
        (
            "GET",
            "/v1/mounts?format=json&format=text".into(),
            "".into(),
            400,
            "bad_request",
        ),
        ("GET", "/v1/mounts".into(), "".into(), 503, "unavailable"),
        ("GET", "/v1/lvm/vgs".into(), "".into(), 503, "unavailable"),
        // Unknown routes, wrong methods.
        ("GET", "/v1/nothing".into(), "".into(), 404, "not_found"),
        (
            "GET",
            "/v1/log/records/1".into(),
            "".into(),
            404,
            "not_found",
        ),
        (
            "PUT",
            "/v1/log/records".into(),
            "{}".into(),
            405,
            "method_not_allowed",
        ),
        (
            "GET",
            "/v1/sync".into(),
            "".into(),
            405,
            "method_not_allowed",
        ),
        (
            "DELETE",
            "/v1/log/consumers".into(),
            "".into(),
            405,
            "method_not_allowed",
        ),
    ];
    for (method, uri, body, status, code) in cases {
        let a: Answer = as_root(&r, method, &uri, body).await;
        assert_eq!(a.status, status, "{method} {uri}: {}", a.text());
        a.assert_error(status, code);
        still_serving(&r).await;
    }
}

#[tokio::test]
async fn a_record_the_format_cannot_hold_appends_nothing() {
    let (fx, r) = router(Limits::default());
    // A name over 64 KiB: the second record is refused, so the first is
    // not appended either.
    let body = format!(
        r#"{{"records":[{{"type":"MARK","name":"ok"}},{{"type":"MARK","name":"{}"}}]}}"#,
        "n".repeat(70_000)
    );
    let a = as_root(&r, "POST", "/v1/log/records", body).await;
    a.assert_error(400, "bad_request");
    assert_eq!(a.json()["error"]["record"], 1);
    assert_eq!(fx.state.log.last_index(), 0);
    still_serving(&r).await;
}

/// Guards the bug where records were checked against the format's limit
/// only: one larger than this log's segments hold passed the check, failed
/// its append, and left the records before it in the log.
#[tokio::test]
async fn a_record_larger_than_a_segment_appends_nothing() {
    let options = weir_log::Options::default()
        .segment_size(64 << 10)
        .retention(weir_log::Retention {
            max_bytes: 1 << 20,
            ..weir_log::Retention::default()
        });
    let fx = fixture_with_log(
        Access::default(),
        Limits::default(),
        Trackers::None,
        options,
    );
    let r = weir_daemon::api::router(fx.state.clone());
    // A 63 KiB name: within the format's limits, not within a 64 KiB
    // segment's room.
    let body = format!(
        r#"{{"records":[{{"type":"MARK","name":"ok"}},{{"type":"MARK","name":"{}"}}]}}"#,
        "n".repeat(63 << 10)
    );
    let a = as_root(&r, "POST", "/v1/log/records", body).await;
    a.assert_error(400, "bad_request");
    assert_eq!(a.json()["error"]["record"], 1);
    assert_eq!(fx.state.log.last_appended(), 0, "nothing appended");
    still_serving(&r).await;
}

#[tokio::test]
async fn a_declared_huge_length_is_refused_before_reading() {
    let (_fx, r) = router(Limits {
        max_body_bytes: 1024,
        max_followers: 4,
    });
    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/v1/log/records")
        .header("content-length", "1099511627776")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    let mut req = req;
    req.extensions_mut().insert(root());
    use tower::ServiceExt;
    let res = r.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), 413);
    still_serving(&r).await;
}

#[tokio::test]
async fn too_many_followers_get_503() {
    let (_fx, r) = router(Limits {
        max_body_bytes: 1024,
        max_followers: 1,
    });
    let mut req = axum::http::Request::builder()
        .uri("/v1/log/records?follow=true")
        .body(axum::body::Body::empty())
        .unwrap();
    req.extensions_mut().insert(root());
    use tower::ServiceExt;
    let held = r.clone().oneshot(req).await.unwrap();
    assert_eq!(held.status(), 200);
    let a = call(&r, "GET", "/v1/log/records?follow=true", "", Some(root())).await;
    a.assert_error(503, "unavailable");
    // A finite read is not a follower.
    assert_eq!(
        call(&r, "GET", "/v1/log/records", "", Some(root()))
            .await
            .status,
        200
    );
    drop(held);
    let mut req = axum::http::Request::builder()
        .uri("/v1/log/records?follow=true&limit=0")
        .body(axum::body::Body::empty())
        .unwrap();
    req.extensions_mut().insert(root());
    assert_eq!(r.clone().oneshot(req).await.unwrap().status(), 200);
}

/// Regression test: hyper answered a request head it could not parse with
/// a 400 of its own and an empty body, unlike every other API error.
#[test]
fn raw_garbage_on_the_socket_gets_a_400_with_the_json_error_body() {
    use std::io::{Read, Write};
    let fx = api_support::plain();
    let served = api_support::Served::start(&fx);
    let garbage: [&[u8]; 3] = [
        b"hello there\r\n\r\n",
        b"GET /v1/status HTTP/9.9\r\n\r\n",
        b"GET /v1/status HTTP/1.1\r\nno colon here\r\n\r\n",
    ];
    for g in garbage {
        let mut s = std::os::unix::net::UnixStream::connect(&served.sock).unwrap();
        s.write_all(g).unwrap();
        let mut reply = Vec::new();
        match s.read_to_end(&mut reply) {
            Ok(_) => {}
            // The server may close with part of the garbage unread.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("reading the reply: {e}"),
        }
        let reply = String::from_utf8_lossy(&reply);
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        assert!(head.starts_with("HTTP/1.1 400 "), "{reply}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{reply}"
        );
        let v: serde_json::Value =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {reply}"));
        assert_eq!(v["error"]["code"], "bad_request", "{reply}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("not valid HTTP/1.1"), "{reply}");
    }
    // A good request is still served, over the same kind of connection.
    let mut s = std::os::unix::net::UnixStream::connect(&served.sock).unwrap();
    s.write_all(b"GET /v1/nosuch HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    // (Routed: 404, or 403 when this test runs as a user the access rule refuses.)
    assert!(
        reply.starts_with("HTTP/1.1 404 ") || reply.starts_with("HTTP/1.1 403 "),
        "{reply}"
    );
    served.join();
}

fn query_chars() -> impl Strategy<Value = String> {
    // Biased to the characters queries are made of.
    proptest::string::string_regex("([a-z=&%+,0-9A-F-]|%[0-9a-fA-F]{2}|[^\\x00]){0,80}").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn query_parsers_never_panic(q in query_chars()) {
        let _ = parse_pairs(&q);
        let _ = RecordsQuery::parse(Some(&q));
        let _ = MountsQuery::parse(Some(&q));
        let _ = DevicesQuery::parse(Some(&q));
    }

    #[test]
    fn valid_queries_round_trip(
        from in proptest::option::of(any::<u64>()),
        limit in proptest::option::of(any::<u64>()),
        follow in any::<bool>(),
        consumer in proptest::option::of("[A-Za-z0-9._-]{1,20}"),
    ) {
        let mut parts = vec![format!("follow={follow}")];
        if let Some(f) = from { parts.push(format!("from={f}")); }
        if let Some(l) = limit { parts.push(format!("limit={l}")); }
        if let Some(c) = &consumer {
            // Percent-encode every byte: decoding must undo it.
            let enc: String = c.bytes().map(|b| format!("%{b:02X}")).collect();
            parts.push(format!("consumer={enc}"));
        }
        let q = RecordsQuery::parse(Some(&parts.join("&"))).unwrap();
        prop_assert_eq!((q.from, q.limit, q.follow, q.consumer), (from, limit, follow, consumer));
    }

    #[test]
    fn body_parsers_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse::<AppendRequest>(&b);
        let _ = parse::<RegisterRequest>(&b);
        let _ = parse::<ClearRequest>(&b);
    }

    #[test]
    fn records_round_trip(
        names in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5),
        kind in any::<u16>(),
    ) {
        // The JSON the API writes for bytes (a string if UTF-8, else an
        // array) is the JSON it reads.
        let recs: Vec<serde_json::Value> = names.iter().map(|n| {
            let name = match std::str::from_utf8(n) {
                Ok(s) => serde_json::json!(s),
                Err(_) => serde_json::json!(n),
            };
            serde_json::json!({"type": kind, "name": name, "fields": {"k": name}})
        }).collect();
        let body = serde_json::json!({"records": recs}).to_string();
        let req: AppendRequest = parse(body.as_bytes()).unwrap();
        for (r, n) in req.records.iter().zip(&names) {
            prop_assert_eq!(&r.name.0, n);
            prop_assert_eq!(r.kind.0.0, kind);
            prop_assert_eq!(&r.fields.0[0].1.0, n);
        }
    }
}

/// Random queries and bodies through the whole router: only 2xx or 4xx,
/// and every 4xx carries the error body.
#[test]
fn the_router_answers_garbage_with_4xx() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_fx, r) = router(Limits {
        max_body_bytes: 256,
        max_followers: 4,
    });
    let routes = [
        ("GET", "/v1/log/records"),
        ("GET", "/v1/mounts"),
        ("GET", "/v1/lvm/pvs"),
        ("GET", "/v1/log/consumers/x"),
        ("POST", "/v1/log/records"),
        ("POST", "/v1/log/consumers"),
        ("POST", "/v1/log/consumers/x/clear"),
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &(
                0..routes.len(),
                "[a-z0-9=&%+,-]{0,40}",
                proptest::collection::vec(any::<u8>(), 0..64),
            ),
            |(i, q, body)| {
                let (m, p) = routes[i];
                let uri = format!("{p}?{q}");
                // An invalid URI never reaches the server: hyper refuses it.
                if uri.parse::<axum::http::Uri>().is_err() {
                    return Ok(());
                }
                let a = rt.block_on(call(&r, m, &uri, body, Some(root())));
                let s = a.status.as_u16();
                prop_assert!(s < 500 || s == 503, "{} {}: {}", m, uri, a.text());
                if s >= 400 {
                    let v = a.json();
                    prop_assert!(v["error"]["code"].is_string(), "{}", v);
                }
                Ok(())
            },
        )
        .unwrap();
    rt.block_on(still_serving(&r));
}
