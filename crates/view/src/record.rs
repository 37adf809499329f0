//! The two forms of a log record:
//! - JSON, one object per line (`weir log tail --json`, the API's record
//!   streams). Names and field values follow [`Bytes`]; target and parent
//!   ids are opaque, so they are always lowercase hex.
//! - text, one line each, in the spirit of Lustre's `lfs changelog`:
//!
//! ```text
//! INDEX TYPE TIME flags=0xF t=HEX p=HEX NAME [KEY=VALUE ...]
//! ```
//!
//! Text names and values are escaped ([`escape`]). The text form is for
//! people; JSON is for programs.

use serde::Serialize;
use std::fmt::Write as _;

use serde::ser::{SerializeMap, Serializer};
use weir_log::LogRecord;

use crate::bytes::{Bytes, escape, hex};
use crate::time::rfc3339_ns;

#[derive(Serialize)]
struct JsonRecord<'a> {
    index: u64,
    /// ns since the epoch.
    time: u64,
    time_iso: String,
    #[serde(rename = "type")]
    kind: String,
    type_code: u16,
    flags: u16,
    target: String,
    parent: String,
    name: Bytes<'a>,
    fields: Fields<'a>,
}

/// Fields as an object, in record order.
struct Fields<'a>(&'a [(String, Vec<u8>)]);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, &Bytes(v))?;
        }
        map.end()
    }
}

/// One record as a text line, without the newline.
pub fn record_line(r: &LogRecord) -> String {
    let mut s = format!(
        "{} {} {} flags={:#x} t={} p={} {}",
        r.index,
        r.kind,
        rfc3339_ns(r.time_ns),
        r.flags,
        hex(&r.target),
        hex(&r.parent),
        escape(&r.name)
    );
    for (k, v) in &r.fields {
        let _ = write!(s, " {}={}", escape(k.as_bytes()), escape(v));
    }
    s
}

/// One record as a JSON line, without the newline.
pub fn record_json(r: &LogRecord) -> String {
    let j = JsonRecord {
        index: r.index,
        time: r.time_ns,
        time_iso: rfc3339_ns(r.time_ns),
        kind: r.kind.to_string(),
        type_code: r.kind.0,
        flags: r.flags,
        target: hex(&r.target),
        parent: hex(&r.parent),
        name: Bytes(&r.name),
        fields: Fields(&r.fields),
    };
    serde_json::to_string(&j).expect("a record serializes to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use weir_log::RecordType;

    fn rec(name: &[u8], fields: Vec<(String, Vec<u8>)>) -> LogRecord {
        LogRecord {
            index: 3,
            time_ns: 1_500_000_000,
            kind: RecordType(300),
            flags: 1,
            target: vec![0, 0xff],
            parent: vec![7],
            name: name.to_vec(),
            fields,
        }
    }

    #[test]
    fn utf8_and_raw_bytes() {
        let r = rec(
            "é\"x".as_bytes(),
            vec![
                ("k".into(), b"\xfe\x01".to_vec()),
                ("z".into(), b"ok".to_vec()),
            ],
        );
        let v: Value = serde_json::from_str(&record_json(&r)).unwrap();
        assert_eq!(v["name"], json!("é\"x"));
        assert_eq!(v["fields"]["k"], json!([254, 1]));
        assert_eq!(v["fields"]["z"], json!("ok"));
        assert_eq!(v["type"], json!("300"));
        assert_eq!(v["type_code"], json!(300));
        assert_eq!(v["target"], json!("00ff"));
        assert_eq!(v["parent"], json!("07"));
        assert_eq!(v["time"], json!(1_500_000_000u64));
        assert_eq!(v["time_iso"], json!("1970-01-01T00:00:01.500000000Z"));

        let v: Value = serde_json::from_str(&record_json(&rec(b"caf\xe9", vec![]))).unwrap();
        assert_eq!(v["name"], json!([99, 97, 102, 0xe9]));
        assert_eq!(v["fields"], json!({}));
    }

    #[test]
    fn line() {
        let r = LogRecord {
            index: 42,
            time_ns: 1_000_000_007,
            kind: RecordType::CREAT,
            flags: 0x12,
            target: vec![0xab, 0x01],
            parent: vec![],
            name: b"f\xff".to_vec(),
            fields: vec![("k".into(), b"v 1".to_vec())],
        };
        assert_eq!(
            record_line(&r),
            "42 CREAT 1970-01-01T00:00:01.000000007Z flags=0x12 t=ab01 p= f\\xff k=v 1"
        );
    }
}
