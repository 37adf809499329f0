//! `weir log write` through the daemon: each batch of lines becomes
//! `POST /v1/log/records` (`"durable": true` with `--sync`, so the daemon
//! answers once the records are fsynced), and the indexes it answers are
//! printed as the direct path prints them.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use weir_client::Client;
use weir_log::RecordType;
use weir_view::bytes::Bytes;

use super::Sink;

/// The longest name a record holds (its length prefix is 16 bits).
const MAX_NAME: usize = u16::MAX as usize;

/// The most JSON sent in one request: well under the daemon's default body
/// limit (1 MiB), even for a batch of empty lines.
const MAX_REQUEST: usize = 256 * 1024;

/// The daemon, through `POST /v1/log/records`.
pub(super) struct ViaDaemon<'a> {
    client: &'a mut Client,
    kind: RecordType,
    durable: bool,
    appended: u64,
}

/// One record of the request body.
#[derive(Serialize)]
struct NewRecord<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    name: Bytes<'a>,
    /// Always empty: the body's shape has room for fields.
    fields: BTreeMap<&'a str, &'a str>,
}

#[derive(Serialize)]
struct AppendRequest<'a> {
    records: &'a [NewRecord<'a>],
    durable: bool,
}

#[derive(Deserialize)]
struct AppendAnswer {
    indexes: Vec<u64>,
}

impl Sink for ViaDaemon<'_> {
    fn batch(&mut self, lines: &[&[u8]], out: &mut dyn Write) -> Result<()> {
        // The daemon would refuse the whole request for one over-long name;
        // checked here, the lines before it are still appended, as they
        // are when writing directly.
        let fit = lines.iter().position(|l| l.len() > MAX_NAME);
        let kind = self.kind.to_string();
        let mut records = Vec::new();
        let mut size = 0;
        for line in &lines[..fit.unwrap_or(lines.len())] {
            // Each byte takes at most 4 characters in JSON ("255,").
            let len = 32 + kind.len() + 4 * line.len();
            if size + len > MAX_REQUEST && !records.is_empty() {
                self.send(&records, out)?;
                records.clear();
                size = 0;
            }
            records.push(NewRecord {
                kind: &kind,
                name: Bytes(line),
                fields: BTreeMap::new(),
            });
            size += len;
        }
        if !records.is_empty() {
            self.send(&records, out)?;
        }
        match fit {
            None => Ok(()),
            Some(i) => Err(anyhow::Error::new(weir_log::Error::FieldTooLong {
                field: "name",
                len: lines[i].len(),
                max: MAX_NAME,
            })
            .context("appending a record")),
        }
    }

    fn appended(&self) -> u64 {
        self.appended
    }
}

impl<'a> ViaDaemon<'a> {
    pub(super) fn new(client: &'a mut Client, kind: RecordType, durable: bool) -> ViaDaemon<'a> {
        ViaDaemon {
            client,
            kind,
            durable,
            appended: 0,
        }
    }

    /// Appends `records` in one request and prints their indexes.
    fn send(&mut self, records: &[NewRecord<'_>], out: &mut dyn Write) -> Result<()> {
        let body = AppendRequest {
            records,
            durable: self.durable,
        };
        let answer: AppendAnswer = match self.client.post_json("/v1/log/records", &body) {
            Ok(answer) => answer,
            Err(e) => {
                // Those before the failed one are in the log (and durable,
                // with `--sync`): printed, as the direct path prints them.
                let appended = e.appended().to_vec();
                self.print(&appended, out)?;
                return Err(e).context("appending records through the daemon");
            }
        };
        if answer.indexes.len() != records.len() {
            bail!(
                "the daemon appended {} records for {} lines",
                answer.indexes.len(),
                records.len()
            );
        }
        self.print(&answer.indexes, out)
    }

    /// Prints the indexes of appended records, one per line.
    fn print(&mut self, indexes: &[u64], out: &mut dyn Write) -> Result<()> {
        self.appended += indexes.len() as u64;
        if indexes.is_empty() {
            return Ok(());
        }
        let mut printed = String::new();
        for i in indexes {
            printed.push_str(&i.to_string());
            printed.push('\n');
        }
        out.write_all(printed.as_bytes())?;
        out.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::net::UnixListener;
    use std::sync::mpsc;

    use serde_json::{Value, json};

    use super::*;

    /// A stand-in for the daemon's `POST /v1/log/records`: it numbers the
    /// records it is sent from 1 and hands each request body to the test.
    fn fake_daemon() -> (tempfile::TempDir, Client, mpsc::Receiver<Value>) {
        fake_daemon_with_room(u64::MAX)
    }

    /// As [`fake_daemon`], but it takes only `room` records in all: the
    /// request that goes past them is answered as the daemon answers a
    /// full disk, with the indexes it appended before.
    fn fake_daemon_with_room(room: u64) -> (tempfile::TempDir, Client, mpsc::Receiver<Value>) {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("d.sock");
        let listener = UnixListener::bind(&sock).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let mut w = conn;
            let mut next = 1u64;
            loop {
                let mut len = 0;
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    let l = line.to_ascii_lowercase();
                    if let Some(v) = l.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    line.clear();
                }
                if line.is_empty() {
                    return;
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                let v: Value = serde_json::from_slice(&body).unwrap();
                let n = v["records"].as_array().unwrap().len() as u64;
                let fit = n.min(room - (next - 1));
                let indexes: Vec<u64> = (next..next + fit).collect();
                next += fit;
                let (status, answer) = if fit == n {
                    ("200 OK", json!({ "indexes": indexes }))
                } else {
                    let error = json!({"code": "log_error", "message": "no space left", "appended": indexes});
                    ("503 Service Unavailable", json!({ "error": error }))
                };
                let answer = answer.to_string();
                let _ = tx.send(v);
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    answer.len()
                );
                w.write_all(head.as_bytes()).unwrap();
                w.write_all(answer.as_bytes()).unwrap();
            }
        });
        let client = Client::connect(&sock).unwrap().unwrap();
        (dir, client, rx)
    }

    #[test]
    fn an_over_long_line_fails_after_the_lines_before_it() {
        let (_d, mut client, sent) = fake_daemon();
        let mut sink = ViaDaemon::new(&mut client, RecordType::CREAT, true);
        let long = vec![b'x'; MAX_NAME + 1];
        let mut out = Vec::new();
        let err = sink
            .batch(&[b"a", b"caf\xe9", &long, b"never"], &mut out)
            .unwrap_err();
        let too_long = err.chain().any(|e| {
            matches!(
                e.downcast_ref::<weir_log::Error>(),
                Some(weir_log::Error::FieldTooLong { field: "name", len, .. }) if *len == MAX_NAME + 1
            )
        });
        assert!(too_long, "{err:#}");
        assert_eq!(out, b"1\n2\n");
        let body = sent.recv().unwrap();
        assert_eq!(
            body,
            json!({"durable": true, "records": [
                {"type": "CREAT", "name": "a", "fields": {}},
                {"type": "CREAT", "name": [99, 97, 102, 233], "fields": {}},
            ]})
        );
        assert!(sent.try_recv().is_err(), "nothing after the long line");
    }

    #[test]
    fn a_large_batch_is_split_into_bounded_requests() {
        let (_d, mut client, sent) = fake_daemon();
        let mut sink = ViaDaemon::new(&mut client, RecordType::MARK, false);
        // Not UTF-8, so each byte costs 4 characters of JSON ("255,"): two
        // of these do not fit in one request.
        let big = vec![0xff; 40_000];
        let mut out = Vec::new();
        sink.batch(&[&big, &big, b"tail"], &mut out).unwrap();
        assert_eq!(out, b"1\n2\n3\n");
        let first = sent.recv().unwrap();
        let second = sent.recv().unwrap();
        assert_eq!(first["records"].as_array().unwrap().len(), 1);
        assert_eq!(first["durable"], false);
        let names: Vec<&Value> = second["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["name"])
            .collect();
        assert_eq!(names.len(), 2);
        assert_eq!(names[0].as_array().unwrap().len(), big.len());
        assert_eq!(names[1], "tail");
        for body in [&first, &second] {
            assert!(body.to_string().len() <= MAX_REQUEST);
        }
    }

    #[test]
    fn the_indexes_a_failed_request_did_append_are_printed() {
        // Regression: when the daemon appended part of a request and then
        // failed (a full disk), it said which indexes it had appended, but
        // `weir log write` printed none of them and left them out of its
        // count, though the direct path prints them.
        let (_d, mut client, _sent) = fake_daemon_with_room(3);
        let mut sink = ViaDaemon::new(&mut client, RecordType::CREAT, false);
        let mut out = Vec::new();
        sink.batch(&[b"a"], &mut out).unwrap();
        let err = sink.batch(&[b"b", b"c", b"d", b"e"], &mut out).unwrap_err();
        assert_eq!(out, b"1\n2\n3\n");
        assert_eq!(sink.appended(), 3);
        let api = err.downcast_ref::<weir_client::Error>().unwrap();
        assert_eq!(api.status(), Some(503));
    }
}
