//! A record stream that fails after its 200 says so: its next record was
//! collected while its client read slowly. A client that sent
//! `TE: trailers` gets every whole line before the gap, then the error
//! object in the `weir-error` trailer; any other client sees the body cut
//! off, never a clean end. Over a real socket, as HTTP/1.1 sends trailers
//! only when the request allows them.

mod api_support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use api_support::{Trackers, fixture_with_log};
use weir_client::{Client, Error, ErrorCode, Next};
use weir_daemon::api::{Access, Limits};
use weir_log::{Options, Record, RecordType, Retention};

const SEGMENT: u64 = 256 << 10;

/// Appends records `from..=upto` with 400-byte names.
fn append(log: &weir_log::Log, from: u64, upto: u64) {
    for i in from..=upto {
        let name = format!("{i:0>400}");
        let a = log
            .append(&Record::new(RecordType::MARK).name(name.as_bytes()))
            .unwrap();
        assert_eq!(a.index(), i);
    }
}

/// Reads from `s` until `needle` has arrived or the connection closes
/// (`s` has a read timeout; 10 s in all).
fn read_until(s: &mut UnixStream, seen: &mut Vec<u8>, needle: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 4096];
    // Only the new bytes are searched (and a needle across the seam).
    let mut from = 0;
    while !seen[from..].windows(needle.len()).any(|w| w == needle) {
        from = seen.len().saturating_sub(needle.len() - 1);
        assert!(
            Instant::now() < deadline,
            "{} never came",
            String::from_utf8_lossy(needle)
        );
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// Guards the bug where such a stream was cut off with no reason given,
/// so `weir log tail -f` through the daemon reported only a broken
/// connection.
#[test]
fn a_stream_whose_next_record_was_collected_ends_with_the_reason() {
    let options = Options::default()
        .segment_size(SEGMENT)
        .retention(Retention {
            max_bytes: 2 * SEGMENT,
            ..Retention::default()
        });
    let fx = fixture_with_log(
        Access::default(),
        Limits::default(),
        Trackers::None,
        options,
    );
    let served = api_support::Served::start(&fx);
    let sock = served.sock.clone();
    let log = fx.state.log.clone();
    append(&log, 1, 3);
    api_support::wait_committed(&log, 3);

    // A client that takes trailers, and a raw one that does not; each
    // reads the first records, then stops reading.
    let mut client = Client::connect(&sock).unwrap().unwrap();
    let mut lines = client
        .get_lines("/v1/log/records?follow=true&format=json")
        .unwrap();
    let wait = Duration::from_secs(10);
    let mut got = Vec::new();
    while got.len() < 3 {
        if let Next::Line(l) = lines.next(wait).unwrap() {
            got.push(serde_json::from_slice::<serde_json::Value>(l).unwrap()["index"].as_u64());
        }
    }
    let mut raw = UnixStream::connect(&sock).unwrap();
    raw.write_all(b"GET /v1/log/records?follow=true&format=json HTTP/1.1\r\nHost: weir\r\n\r\n")
        .unwrap();
    let mut seen = Vec::new();
    raw.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    read_until(&mut raw, &mut seen, b"\"index\":3,");

    // Far more than the socket buffers, the notifier's window (8192
    // records) and the size limit hold: the streams' next records go.
    let total = 30_000;
    append(&log, 4, total);
    api_support::wait_committed(&log, total);
    // Past anything the buffers between the streams and here hold (a
    // few thousand records), whatever the segment layout.
    let deadline = Instant::now() + Duration::from_secs(10);
    while log.first_index() < 10_000 {
        assert!(Instant::now() < deadline, "retention never ran");
        std::thread::sleep(Duration::from_millis(10));
    }

    // Every whole line up to the gap, in order, then the reason.
    let deadline = Instant::now() + Duration::from_secs(30);
    let err = loop {
        assert!(
            Instant::now() < deadline,
            "no error after {} records",
            got.len()
        );
        match lines.next(Duration::from_millis(200)) {
            Ok(Next::Line(l)) => {
                got.push(serde_json::from_slice::<serde_json::Value>(l).unwrap()["index"].as_u64())
            }
            Ok(Next::Idle) => {}
            Ok(Next::End) => panic!("a clean end after {} records", got.len()),
            Err(e) => break e,
        }
    };
    let want: Vec<_> = (1..=got.len() as u64).map(Some).collect();
    assert_eq!(got, want, "gap-free up to the gap");
    assert!(
        (got.len() as u64) < log.first_index(),
        "it stopped at the gap"
    );
    assert!(
        matches!(&err, Error::Aborted { code: ErrorCode::BadRange, message }
            if message.contains("garbage-collected")),
        "{err:?}"
    );
    drop(lines);

    // Without `TE: trailers`: no clean last chunk, and the connection
    // closes.
    read_until(&mut raw, &mut seen, b"\r\n0\r\n\r\n");
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text:.200}");
    assert!(
        !text.contains("weir-error"),
        "no trailer it did not ask for"
    );
    assert!(
        !text.ends_with("0\r\n\r\n"),
        "the body is cut off, not ended"
    );

    served.join();
}
