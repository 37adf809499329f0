//! The client against a scripted server on a temporary socket: what it
//! sends, how it copies plain and chunked bodies, how it reads an error
//! object, streams lines, and tells "nobody listens" from real failures.

mod server;

use std::time::Duration;

use serde_json::{Value, json};
use server::{
    Server, Step, chunk, chunked_head, chunked_head_with_trailer, error_trailer, fixed, last_chunk,
};
use weir_client::{Client, Error, ErrorCode, Next};

fn connect(s: &Server) -> Client {
    Client::connect(&s.socket)
        .expect("connect")
        .expect("the server listens")
}

#[test]
fn a_chunked_listing_is_copied_byte_for_byte() {
    let body: &[u8] = b"TARGET SOURCE\n/ /dev/sda1\n/mnt/caf\xe9 none\n";
    let s = Server::start(vec![vec![
        chunked_head("200 OK", "text/plain; charset=utf-8"),
        chunk(&body[..3]),
        Step::Sleep(Duration::from_millis(20)),
        chunk(&body[3..30]),
        chunk(&body[30..]),
        last_chunk(),
    ]]);
    let mut c = connect(&s);
    let mut out = Vec::new();
    let n = c.get_text("/v1/mounts?format=text", &mut out).unwrap();
    assert_eq!(out, body);
    assert_eq!(n, body.len() as u64);
    let seen = s.seen();
    assert_eq!(seen.line, "GET /v1/mounts?format=text HTTP/1.1");
    assert_eq!(seen.header("host"), Some("localhost"));
}

#[test]
fn an_error_object_is_decoded_and_the_connection_stays_usable() {
    let s = Server::start(vec![
        fixed(
            "404 Not Found",
            "application/json",
            br#"{"error":{"code":"unknown_consumer","message":"no such consumer: x"}}"#,
        ),
        fixed("200 OK", "application/json", br#"{"index":42}"#),
    ]);
    let mut c = connect(&s);
    let err = c.get_json::<Value>("/v1/log/consumers/x").unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UnknownConsumer));
    assert_eq!(err.status(), Some(404));
    let Error::Api { message, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(message, "no such consumer: x");
    s.seen();
    let v: Value = c.post("/v1/sync").unwrap();
    assert_eq!(v, json!({"index": 42}));
    let seen = s.seen();
    assert_eq!(seen.line, "POST /v1/sync HTTP/1.1");
    assert!(seen.body.is_empty());
}

#[test]
fn a_chunked_error_body_is_decoded_too() {
    let obj = br#"{"error":{"code":"bad_range","message":"from 99 is past the end"}}"#;
    let s = Server::start(vec![
        vec![
            chunked_head("400 Bad Request", "application/json"),
            chunk(&obj[..10]),
            chunk(&obj[10..]),
            last_chunk(),
        ],
        fixed("502 Bad Gateway", "text/html", b"<html>oops</html>"),
    ]);
    let mut c = connect(&s);
    let mut out = Vec::new();
    let err = c.get_text("/v1/log/records?from=99", &mut out).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::BadRange), "{err:?}");
    assert!(out.is_empty(), "an error body is not copied out");
    let err = c.get_text("/v1/mounts", &mut out).unwrap_err();
    assert!(
        matches!(&err, Error::Status { status: 502, excerpt } if excerpt == "<html>oops</html>"),
        "{err:?}"
    );
    assert_eq!(err.code(), None);
}

#[test]
fn post_json_sends_json_and_delete_takes_no_content() {
    let s = Server::start(vec![
        fixed(
            "201 Created",
            "application/json",
            br#"{"id":3,"name":"c1"}"#,
        ),
        vec![Step::Write(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec())],
        fixed("200 OK", "application/json", b"not json"),
    ]);
    let mut c = connect(&s);
    let v: Value = c
        .post_json("/v1/log/consumers", &json!({"name": "c1", "mask": "all"}))
        .unwrap();
    assert_eq!(v["id"], 3);
    let seen = s.seen();
    assert_eq!(seen.line, "POST /v1/log/consumers HTTP/1.1");
    assert_eq!(seen.header("content-type"), Some("application/json"));
    let sent: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(sent, json!({"name": "c1", "mask": "all"}));

    c.delete("/v1/log/consumers/c1").unwrap();
    assert_eq!(s.seen().line, "DELETE /v1/log/consumers/c1 HTTP/1.1");

    let err = c.get_json::<Value>("/v1/status").unwrap_err();
    assert!(matches!(err, Error::Decode(_)), "{err:?}");
}

#[test]
fn lines_arrive_whole_across_chunks_with_idle_spells() {
    let s = Server::start(vec![vec![
        chunked_head("200 OK", "application/x-ndjson"),
        chunk(b"{\"index\":1}\n{\"ind"),
        Step::Sleep(Duration::from_millis(1000)),
        chunk(b"ex\":2}\n"),
        chunk(b"{\"index\":3}\n"),
        last_chunk(),
    ]]);
    let mut c = connect(&s);
    let mut lines = c.get_lines("/v1/log/records?follow=true").unwrap();
    // The first line may be slow to come on a loaded machine; the
    // server's pause is ten short waits long, so at least one is idle.
    assert_eq!(
        lines.next(Duration::from_secs(5)).unwrap(),
        Next::Line(b"{\"index\":1}")
    );
    let wait = Duration::from_millis(100);
    assert!(!lines.pending(), "half a line is not a pending line");
    let mut got = Vec::new();
    let mut idle = 0;
    loop {
        match lines.next(wait).unwrap() {
            Next::Line(l) => got.push(l.to_vec()),
            Next::Idle => idle += 1,
            Next::End => break,
        }
    }
    assert_eq!(got, [b"{\"index\":2}".to_vec(), b"{\"index\":3}".to_vec()]);
    assert!(idle >= 1, "the pause was seen as idle");
}

#[test]
fn a_stream_cut_mid_line_is_an_error() {
    let s = Server::start(vec![vec![
        chunked_head("200 OK", "application/x-ndjson"),
        chunk(b"one\ntw"),
        last_chunk(),
    ]]);
    let mut c = connect(&s);
    let mut lines = c.get_lines("/v1/log/records").unwrap();
    let wait = Duration::from_secs(5);
    assert_eq!(lines.next(wait).unwrap(), Next::Line(b"one"));
    let err = lines.next(wait).unwrap_err();
    assert!(matches!(err, Error::Truncated), "{err:?}");
}

/// Guards the bug where the call after a broken connection returned
/// `End`, as if the stream had ended cleanly.
#[test]
fn a_broken_stream_stays_broken() {
    let s = Server::start(vec![vec![
        chunked_head("200 OK", "application/x-ndjson"),
        chunk(b"one\n"),
    ]]);
    let mut c = connect(&s);
    let mut lines = c.get_lines("/v1/log/records").unwrap();
    let wait = Duration::from_secs(5);
    assert_eq!(lines.next(wait).unwrap(), Next::Line(b"one"));
    let err = lines.next(wait).unwrap_err();
    assert!(matches!(err, Error::Http(_)), "{err:?}");
    for _ in 0..2 {
        let err = lines.next(wait).unwrap_err();
        assert!(matches!(err, Error::Broken), "{err:?}");
    }
}

/// Guards the bug where a stream the daemon had to end early (its next
/// record was collected while the client read slowly) looked like a
/// broken connection, or like a normal end, with no reason given.
#[test]
fn an_error_trailer_ends_a_stream_with_the_daemons_error() {
    let answer = || {
        vec![
            chunked_head_with_trailer("application/x-ndjson"),
            chunk(b"{\"index\":1}\n{\"index\":2}\n"),
            error_trailer("bad_range", "index 3 was garbage-collected"),
        ]
    };
    let s = Server::start(vec![answer(), answer()]);
    let mut c = connect(&s);
    let mut lines = c.get_lines("/v1/log/records?follow=true").unwrap();
    let wait = Duration::from_secs(5);
    assert_eq!(lines.next(wait).unwrap(), Next::Line(b"{\"index\":1}"));
    assert_eq!(lines.next(wait).unwrap(), Next::Line(b"{\"index\":2}"));
    let err = lines.next(wait).unwrap_err();
    assert!(
        matches!(&err, Error::Aborted { code: ErrorCode::BadRange, message }
            if message == "index 3 was garbage-collected"),
        "{err:?}"
    );
    drop(lines);
    let seen = s.seen();
    assert_eq!(
        seen.header("te"),
        Some("trailers"),
        "the client asks for trailers"
    );
    assert_eq!(seen.header("connection"), Some("TE"));

    // A copied answer: the lines are out, then the error.
    let mut out = Vec::new();
    let err = c.get_text("/v1/log/records", &mut out).unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::BadRange), "{err:?}");
    assert_eq!(out, b"{\"index\":1}\n{\"index\":2}\n");
}

#[test]
fn an_error_trailer_after_half_a_line_fails_every_call_after_the_whole_ones() {
    let s = Server::start(vec![vec![
        chunked_head_with_trailer("application/x-ndjson"),
        chunk(b"{\"index\":1}\n{\"ind"),
        error_trailer("log_error", "read failed"),
    ]]);
    let mut c = connect(&s);
    let mut lines = c.get_lines("/v1/log/records").unwrap();
    let wait = Duration::from_secs(5);
    assert_eq!(lines.next(wait).unwrap(), Next::Line(b"{\"index\":1}"));
    for _ in 0..2 {
        let err = lines.next(wait).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Aborted {
                    code: ErrorCode::LogError,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}

#[test]
fn an_endless_line_is_refused() {
    let piece = vec![b'x'; 1 << 20];
    let mut steps = vec![chunked_head("200 OK", "application/x-ndjson")];
    steps.extend((0..=weir_client::MAX_LINE >> 20).map(|_| chunk(&piece)));
    steps.push(last_chunk());
    let s = Server::start(vec![steps]);
    let mut c = connect(&s);
    let mut lines = c.get_lines("/v1/log/records").unwrap();
    let err = lines.next(Duration::from_secs(10)).unwrap_err();
    assert!(matches!(err, Error::LineTooLong { .. }), "{err:?}");
}

#[test]
fn a_silent_daemon_times_out() {
    let s = Server::start(vec![vec![Step::Sleep(Duration::from_millis(500))]]);
    let mut c = connect(&s);
    c.set_timeout(Some(Duration::from_millis(50)));
    let err = c.get_json::<Value>("/v1/status").unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
}

#[test]
fn nobody_listening_is_none_but_other_failures_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.sock");
    assert!(Client::connect(&missing).unwrap().is_none());

    // A socket file left behind by a daemon that is gone: refused.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    assert!(Client::connect(&stale).unwrap().is_none());

    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let err = Client::connect(&file.join("sock")).unwrap_err();
    let Error::Connect { socket, source } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(socket, &file.join("sock"));
    assert_eq!(source.kind(), std::io::ErrorKind::NotADirectory);
}
