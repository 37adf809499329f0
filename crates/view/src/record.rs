//! The two forms of a log record:
//! - JSON, one object per line (`weir log tail --json`, the API's record
//!   streams). Names and field values follow [`Bytes`]; target and parent
//!   ids are opaque, so they are always lowercase hex.
//! - text, one line each, in the spirit of Lustre's `lfs changelog`:
//!
//! ```text
//! INDEX TYPE TIME flags=0xF(NAME,...) t=HEX p=HEX NAME [KEY=VALUE ...]
//! ```
//!
//! Text names and values are escaped ([`escape`]). The text form is for
//! people: an LVM record's uuids show as LVM prints them. JSON is for
//! programs.
//!
//! Both forms name the set flag bits ([`flag_names`]) beside the number. A
//! bit means what the source of the record's type says: weir-mounts and
//! weir-devices name their own bits beside their constants, and every
//! source shares weir-log's `RECONCILED`. A bit without a name (an
//! application's, say) shows as its hex value, so the names lose nothing.

use std::fmt::{self, Write as _};

use serde::de::{Deserializer, MapAccess, Unexpected, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use weir_log::{FLAG_RECONCILED, LogRecord, RecordType};

use crate::bytes::{ByteBuf, Bytes, escape, hex};
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
    flag_names: Vec<Flag>,
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

/// The flag every source shares, by name.
const SHARED: (u16, &str) = (FLAG_RECONCILED, "RECONCILED");

/// The names the source of records of type `kind` gives its flag bits.
fn source_flags(kind: RecordType) -> &'static [(u16, &'static str)] {
    if weir_mounts::record::TYPES.contains(&kind) {
        &weir_mounts::record::FLAG_NAMES
    } else if weir_devices::record::TYPES.contains(&kind) {
        &weir_devices::record::FLAG_NAMES
    } else if weir_fs::record::TYPES.contains(&kind) {
        &weir_fs::record::FLAG_NAMES
    } else {
        &[]
    }
}

/// One set flag bit of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// A bit its source names (`COMPARE`).
    Named(&'static str),
    /// A bit without a name, shown as its value (`0x80`).
    Unnamed(u16),
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Flag::Named(name) => f.write_str(name),
            Flag::Unnamed(bit) => write!(f, "{bit:#x}"),
        }
    }
}

impl Serialize for Flag {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The set bits of `flags` on a record of type `kind`, lowest first.
pub fn flag_names(kind: RecordType, flags: u16) -> Vec<Flag> {
    let named = source_flags(kind);
    (0..u16::BITS)
        .map(|i| 1u16 << i)
        .filter(|bit| flags & bit != 0)
        .map(|bit| {
            named
                .iter()
                .chain([&SHARED])
                .find(|(b, _)| *b == bit)
                .map_or(Flag::Unnamed(bit), |(_, name)| Flag::Named(name))
        })
        .collect()
}

/// One record as a text line, without the newline.
pub fn record_line(r: &LogRecord) -> String {
    let mut s = format!(
        "{} {} {} flags={:#x}",
        r.index,
        r.kind,
        rfc3339_ns(r.time_ns),
        r.flags
    );
    // The names once a bit has one: `0x2(0x2)` would tell nothing more.
    let flags = flag_names(r.kind, r.flags);
    if flags.iter().any(|f| matches!(f, Flag::Named(_))) {
        let names: Vec<String> = flags.iter().map(Flag::to_string).collect();
        let _ = write!(s, "({})", names.join(","));
    }
    let _ = write!(
        s,
        " t={} p={} {}",
        id_text(r.kind, &r.target),
        id_text(r.kind, &r.parent),
        escape(&r.name)
    );
    for (k, v) in &r.fields {
        let _ = write!(s, " {}={}", escape(k.as_bytes()), escape(v));
    }
    s
}

/// A target or parent id in the text form: an LVM record's uuid as LVM
/// prints it (`HVjR5j-d0tK-...`), which a person can match against `pvs -o
/// pv_uuid`; any other id, or bytes that are no uuid, as hex.
fn id_text(kind: RecordType, id: &[u8]) -> String {
    let lvm = weir_devices::record::TYPES.contains(&kind)
        && !matches!(
            kind,
            RecordType::DEVICE_ADD | RecordType::DEVICE_REMOVE | RecordType::DEVICE_CHANGE
        );
    match weir_lvm::Uuid::parse(id) {
        Some(u) if lvm && id.len() == 32 => u.to_string(),
        _ => hex(id),
    }
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
        flag_names: flag_names(r.kind, r.flags),
        target: hex(&r.target),
        parent: hex(&r.parent),
        name: Bytes(&r.name),
        fields: Fields(&r.fields),
    };
    serde_json::to_string(&j).expect("a record serializes to JSON")
}

/// A JSON line that is not a record as [`record_json`] writes it.
#[derive(Debug, thiserror::Error)]
#[error("not a record line: {0}")]
pub struct RecordJsonError(#[from] serde_json::Error);

/// The record a [`record_json`] line shows, whole: `weir log tail` reads
/// the daemon's stream back into records so that it selects and renders
/// them as it does the records it reads itself.
pub fn record_from_json(line: &str) -> Result<LogRecord, RecordJsonError> {
    #[derive(Deserialize)]
    struct In {
        index: u64,
        time: u64,
        type_code: u16,
        flags: u16,
        target: HexIn,
        parent: HexIn,
        name: ByteBuf,
        fields: FieldsIn,
    }
    let r: In = serde_json::from_str(line)?;
    Ok(LogRecord {
        index: r.index,
        time_ns: r.time,
        kind: RecordType(r.type_code),
        flags: r.flags,
        target: r.target.0,
        parent: r.parent.0,
        name: r.name.0,
        fields: r.fields.0,
    })
}

/// A hex id read back.
struct HexIn(Vec<u8>);

impl<'de> Deserialize<'de> for HexIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let bad = || serde::de::Error::invalid_value(Unexpected::Str(&s), &"hex digits");
        if s.len() % 2 != 0 {
            return Err(bad());
        }
        (0..s.len())
            .step_by(2)
            .map(|i| {
                s.get(i..i + 2)
                    .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(bad)
            })
            .collect::<Result<_, _>>()
            .map(HexIn)
    }
}

/// Fields read back in the order they are written (a map would sort them).
struct FieldsIn(Vec<(String, Vec<u8>)>);

impl<'de> Deserialize<'de> for FieldsIn {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FieldsIn;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of fields")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<FieldsIn, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, ByteBuf>()? {
                    out.push((k, v.0));
                }
                Ok(FieldsIn(out))
            }
        }
        d.deserialize_map(V)
    }
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
        assert_eq!(v["flags"], json!(1));
        assert_eq!(v["flag_names"], json!(["0x1"]));
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
            // CREAT is weir-fs's: its bits have names.
            "42 CREAT 1970-01-01T00:00:01.000000007Z flags=0x12(VERIFIED,IN) t=ab01 p= f\\xff k=v 1"
        );
    }

    #[test]
    fn lvm_uuids_show_as_lvm_prints_them_in_text_and_stay_hex_in_json() {
        let pv = b"HVjR5jd0tKj9jq2vITB3XQWGSdVQqFEU".to_vec();
        let vg = b"dOd7pVo3dIc2RsLb0AShT5WnC0eQJ0d1".to_vec();
        let r = LogRecord {
            index: 5,
            time_ns: 0,
            kind: RecordType::PV_FOUND,
            flags: 0,
            target: pv.clone(),
            parent: vg.clone(),
            name: b"loop5".to_vec(),
            fields: vec![],
        };
        let line = record_line(&r);
        assert!(
            line.contains(" t=HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU p=dOd7pV-o3dI-c2Rs-Lb0A-ShT5-WnC0-eQJ0d1 loop5"),
            "{line}"
        );
        let v: Value = serde_json::from_str(&record_json(&r)).unwrap();
        assert_eq!(v["target"], json!(hex(&pv)));
        // An orphan PV has no parent; another type's 32 letters stay hex.
        let orphan = LogRecord {
            parent: vec![],
            ..r.clone()
        };
        assert!(record_line(&orphan).contains(" p= loop5"));
        let app = LogRecord {
            kind: RecordType(300),
            ..r
        };
        assert!(record_line(&app).contains(&format!(" t={} ", hex(&pv))));
    }

    #[test]
    fn flags_are_named_by_the_source_of_the_type() {
        let with = |kind: RecordType, flags: u16| LogRecord {
            index: 5,
            time_ns: 0,
            kind,
            flags,
            target: vec![],
            parent: vec![],
            name: b"n".to_vec(),
            fields: vec![],
        };
        let json = |r: &LogRecord| -> Value {
            let v: Value = serde_json::from_str(&record_json(r)).unwrap();
            v["flag_names"].clone()
        };
        // A mount's bit 0 is COMPARE, a device's SCAN; RECONCILED is
        // everyone's.
        let m = with(RecordType::MOUNT_ATTACH, 0x8003);
        assert_eq!(json(&m), json!(["COMPARE", "GONE", "RECONCILED"]));
        assert_eq!(
            record_line(&m),
            "5 MOUNT_ATTACH 1970-01-01T00:00:00.000000000Z \
             flags=0x8003(COMPARE,GONE,RECONCILED) t= p= n"
        );
        let d = with(RecordType::LV_CHANGE, 0x8081);
        assert_eq!(json(&d), json!(["SCAN", "0x80", "RECONCILED"]));
        assert!(record_line(&d).contains(" flags=0x8081(SCAN,0x80,RECONCILED) "));
        // Another type has only the shared name; its own bits stay numbers.
        let app = with(RecordType(300), 0x8002);
        assert_eq!(json(&app), json!(["0x2", "RECONCILED"]));
        assert!(record_line(&app).contains(" flags=0x8002(0x2,RECONCILED) "));
        let mark = with(RecordType::MARK, 0x4);
        assert_eq!(json(&mark), json!(["0x4"]));
        assert!(record_line(&mark).contains(" flags=0x4 t="));
        let none = with(RecordType::MOUNT_DETACH, 0);
        assert_eq!(json(&none), json!([]));
        assert!(record_line(&none).contains(" flags=0x0 t="));
        // Each source's names are single bits clear of the shared one.
        for (bit, name) in weir_mounts::record::FLAG_NAMES
            .iter()
            .chain(&weir_devices::record::FLAG_NAMES)
            .chain(&weir_fs::record::FLAG_NAMES)
        {
            assert!(bit.count_ones() == 1 && *bit != SHARED.0, "{name}");
        }
        // The JSON key follows the number.
        assert!(record_json(&m).contains(r#""flags":32771,"flag_names":["COMPARE","#));
    }

    #[test]
    fn ids_that_are_not_hex_digits_are_refused() {
        let good = record_json(&LogRecord {
            index: 1,
            time_ns: 0,
            kind: RecordType::MARK,
            flags: 0,
            target: vec![0x0f],
            parent: vec![],
            name: vec![],
            fields: vec![],
        });
        assert!(record_from_json(&good).is_ok());
        for bad in ["+f", "-1", " f", "0", "zz"] {
            let line = good.replacen("\"target\":\"0f\"", &format!("\"target\":\"{bad}\""), 1);
            assert!(record_from_json(&line).is_err(), "{bad:?} was taken as hex");
        }
    }

    proptest::proptest! {
        /// A JSON line reads back into the very record, so the CLI renders
        /// the daemon's records as it renders its own.
        #[test]
        fn json_reads_back_whole(
            index in proptest::num::u64::ANY,
            time_ns in proptest::num::u64::ANY,
            kind in proptest::num::u16::ANY,
            flags in proptest::num::u16::ANY,
            target in proptest::collection::vec(proptest::num::u8::ANY, 0..20),
            parent in proptest::collection::vec(proptest::num::u8::ANY, 0..20),
            name in proptest::collection::vec(proptest::num::u8::ANY, 0..20),
            fields in proptest::collection::vec(
                ("[a-z_]{1,6}", proptest::collection::vec(proptest::num::u8::ANY, 0..8)), 0..6),
        ) {
            let r = LogRecord { index, time_ns, kind: RecordType(kind), flags, target, parent, name, fields };
            let back = record_from_json(&record_json(&r)).unwrap();
            proptest::prop_assert_eq!(back, r);
        }
    }
}
