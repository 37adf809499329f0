//! The JSON form of a record (one object per line in `weir log tail --json`).
//!
//! Names and field values are bytes that need not be UTF-8. They follow the
//! journald `-o json` convention so that nothing is lost: a JSON string when
//! the bytes are valid UTF-8, otherwise an array of byte values (0-255).
//! Target and parent ids are opaque, so they are always lowercase hex.

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use weir_log::LogRecord;

use crate::text::hex;
use crate::time_fmt::rfc3339_ns;

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

/// Bytes as a string if they are UTF-8, else as an array of numbers. Also
/// the form of paths in `weir mounts --json`.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for b in self.0 {
                    seq.serialize_element(b)?;
                }
                seq.end()
            }
        }
    }
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

/// One record as a JSON line, without the newline.
pub(crate) fn record_json(r: &LogRecord) -> String {
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
}
