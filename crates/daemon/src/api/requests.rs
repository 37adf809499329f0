//! Request bodies (hostile input): the JSON of `POST /v1/log/records`,
//! `POST /v1/log/consumers` and `POST /v1/log/consumers/{name}/clear`.
//!
//! Unknown members are refused, so a typo is an error. Bytes come in the
//! forms records go out in (see `weir_view::bytes`): a name or a field
//! value is a string when it is UTF-8, else an array of byte values; the
//! target and parent ids are lowercase hex. Fields keep their order.
//! Every object of a request is a JSON object: serde's derived structs
//! would also take an array of the members' values in order, which the
//! API does not document and nobody should depend on. A whole number may
//! be written `2.0` or `2e0` as well as `2`: JSON Schema, which the
//! document's schemas are, calls each the integer 2, and a client whose
//! numbers are all floats writes them so; `2.5` is refused. The body's
//! size is bounded before it is parsed (module `api::body`).

use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use weir_log::codec::MAX_FIELDS;
use weir_log::{Field, Record, RecordType};

/// `POST /v1/log/records`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct AppendRequest {
    /// The records, appended in this order.
    pub records: Vec<NewRecord>,
    /// Answer only once they are durable.
    #[serde(default)]
    pub durable: bool,
}

/// One record to append.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct NewRecord {
    /// Its type: a name (`"MARK"`), a number, or a number as a string.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// Flags.
    #[serde(default, deserialize_with = "whole_u16")]
    pub flags: u16,
    /// The target id, hex.
    #[serde(default)]
    pub target: Hex,
    /// The parent id, hex.
    #[serde(default)]
    pub parent: Hex,
    /// The name.
    #[serde(default)]
    pub name: ByteString,
    /// Extra fields, in order.
    #[serde(default)]
    pub fields: Fields,
}

impl NewRecord {
    /// The fields in the form [`Record`] borrows.
    pub fn log_fields(&self) -> Vec<Field<'_>> {
        self.fields
            .0
            .iter()
            .map(|(k, v)| Field {
                key: k,
                value: &v.0,
            })
            .collect()
    }

    /// The record to append, borrowing `self` and `fields` (from
    /// [`NewRecord::log_fields`]).
    pub fn record<'a>(&'a self, fields: &'a [Field<'a>]) -> Record<'a> {
        Record::new(self.kind.0)
            .flags(self.flags)
            .target(&self.target.0)
            .parent(&self.parent.0)
            .name(&self.name.0)
            .fields(fields)
    }
}

/// `POST /v1/log/consumers`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct RegisterRequest {
    /// The consumer's name.
    pub name: String,
    /// The types it reads (`all,-MARK`); every type when absent (`null`
    /// is refused: the document's mask is a string).
    #[serde(default, deserialize_with = "some_string")]
    pub mask: Option<String>,
}

/// `POST /v1/log/consumers/{name}/clear`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct ClearRequest {
    /// Clear up to this index; 0 (the default) clears everything so far.
    #[serde(default, deserialize_with = "whole_u64")]
    pub index: u64,
}

/// A request object that is a JSON object only. The derive (with
/// `remote = "Self"`) gives each type an inherent `deserialize` that also
/// takes an array; the trait's reaches it only through a map.
trait FromObject: Sized {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

struct ObjectOnly<T>(PhantomData<T>);

impl<'de, T: FromObject> Visitor<'de> for ObjectOnly<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::from_map(map)
    }
}

macro_rules! object_only {
    ($($t:ident),*) => {$(
        impl FromObject for $t {
            fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
                $t::deserialize(MapAccessDeserializer::new(map))
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                d.deserialize_map(ObjectOnly(PhantomData))
            }
        }
    )*};
}

object_only!(AppendRequest, NewRecord, RegisterRequest, ClearRequest);

/// A whole number from 0 to `max`: `2`, `2.0` or `2e0`.
struct Whole {
    max: u64,
}

impl Visitor<'_> for Whole {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a whole number from 0 to {}", self.max)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if v <= self.max {
            Ok(v)
        } else {
            Err(E::invalid_value(de::Unexpected::Unsigned(v), &self))
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(u) => self.visit_u64(u),
            Err(_) => Err(E::invalid_value(de::Unexpected::Signed(v), &self)),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        // 2^64 is the first float past u64::MAX; every float from 2^53 up
        // is whole, and converts exactly below 2^64.
        if v.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&v) {
            self.visit_u64(v as u64)
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }
}

fn whole<'de, D: Deserializer<'de>>(d: D, max: u64) -> Result<u64, D::Error> {
    d.deserialize_any(Whole { max })
}

fn whole_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    whole(d, u64::MAX)
}

fn whole_u16<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    let v = whole(d, u16::MAX.into())?;
    u16::try_from(v).map_err(|_| de::Error::custom("a whole number above 65535"))
}

/// A member that may be absent but, when given, is a string (not `null`).
fn some_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// One byte of an array of byte values.
struct Byte(u8);

impl<'de> Deserialize<'de> for Byte {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Byte, D::Error> {
        let v = whole(d, u8::MAX.into())?;
        u8::try_from(v)
            .map(Byte)
            .map_err(|_| de::Error::custom("a byte value above 255"))
    }
}

/// A record type as JSON gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind(pub RecordType);

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Kind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a record type name or a number from 0 to 65535")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Kind, E> {
                u16::try_from(v)
                    .map(|c| Kind(RecordType(c)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Kind, E> {
                u16::try_from(v)
                    .map(|c| Kind(RecordType(c)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Kind, E> {
                let code = Whole {
                    max: u16::MAX.into(),
                }
                .visit_f64::<E>(v);
                match code {
                    Ok(c) => self.visit_u64(c),
                    Err(_) => Err(E::invalid_value(de::Unexpected::Float(v), &self)),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Kind, E> {
                RecordType::parse(v)
                    .map(Kind)
                    .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_any(V)
    }
}

/// Bytes as JSON gives them: a string (its UTF-8) or an array of byte
/// values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByteString(pub Vec<u8>);

impl<'de> Deserialize<'de> for ByteString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ByteString, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ByteString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of byte values")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteString, E> {
                Ok(ByteString(v.as_bytes().to_vec()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ByteString, A::Error> {
                // The hint comes from the input: cap it.
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(Byte(b)) = seq.next_element()? {
                    out.push(b);
                }
                Ok(ByteString(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// Opaque id bytes as lowercase (or upper case) hex.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hex(pub Vec<u8>);

impl<'de> Deserialize<'de> for Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Hex, D::Error> {
        let s = String::deserialize(d)?;
        decode_hex(&s)
            .map(Hex)
            .ok_or_else(|| de::Error::custom("expected an even number of hex digits"))
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks_exact(2)
        .map(|p| {
            let d = |c: u8| char::from(c).to_digit(16);
            u8::try_from(d(p[0])? * 16 + d(p[1])?).ok()
        })
        .collect()
}

/// A record's fields: a JSON object, kept in order; a key twice is an
/// error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields(pub Vec<(String, ByteString)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of field names to strings or byte arrays")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut out: Vec<(String, ByteString)> = Vec::new();
                // A set, not a search of `out`: a body of 1 MiB names about
                // 90,000 keys, and comparing each with all before it took
                // seconds.
                let mut seen = HashSet::new();
                while let Some((k, v)) = map.next_entry::<String, ByteString>()? {
                    if out.len() == MAX_FIELDS {
                        return Err(de::Error::custom(format!(
                            "a record has at most {MAX_FIELDS} fields"
                        )));
                    }
                    if !seen.insert(k.clone()) {
                        return Err(de::Error::custom(format!("field {k:?} is given twice")));
                    }
                    out.push((k, v));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses a body as `T`; the error says where and what is wrong.
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_request_forms() {
        let r: AppendRequest = parse(
            br#"{"records":[{"type":"mark","name":"hi","fields":{"z":"1","a":[255,0]}},
                {"type":300,"flags":2,"target":"00FF","name":[99,97,102,233]}],"durable":true}"#,
        )
        .unwrap();
        assert!(r.durable);
        assert_eq!(r.records[0].kind.0, RecordType::MARK);
        assert_eq!(r.records[0].name.0, b"hi");
        let keys: Vec<&str> = r.records[0]
            .fields
            .0
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["z", "a"]);
        assert_eq!(r.records[0].fields.0[1].1.0, [255, 0]);
        assert_eq!(r.records[1].kind.0, RecordType(300));
        assert_eq!(r.records[1].target.0, [0, 255]);
        assert_eq!(r.records[1].name.0, b"caf\xe9");
    }

    #[test]
    fn refusals() {
        for bad in [
            &br#"{"records":[{"type":"NOPE"}]}"#[..],
            br#"{"records":[{"type":70000}]}"#,
            br#"{"records":[{"type":-1}]}"#,
            br#"{"records":[{"type":"MARK","name":[256]}]}"#,
            br#"{"records":[{"type":"MARK","target":"abc"}]}"#,
            br#"{"records":[{"type":"MARK","target":"zz"}]}"#,
            br#"{"records":[{"type":"MARK","fields":{"a":"1","a":"2"}}]}"#,
            br#"{"records":[{"type":"MARK","extra":1}]}"#,
            br#"{"records":[{}]}"#,
            br#"{"records":"x"}"#,
            br#"{"records":[]"#,
            b"",
        ] {
            assert!(
                parse::<AppendRequest>(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(parse::<RegisterRequest>(br#"{"name":3}"#).is_err());
        assert!(parse::<ClearRequest>(br#"{"index":"3"}"#).is_err());
        assert_eq!(parse::<ClearRequest>(b"{}").unwrap().index, 0);
    }

    #[test]
    fn every_request_object_is_a_json_object_never_an_array() {
        // serde's derived structs take an array of the members' values in
        // order too: `[5]` was a clear up to 5, `[]` a clear of everything.
        let e = parse::<ClearRequest>(b"[]").unwrap_err();
        assert!(e.to_string().contains("expected a JSON object"), "{e}");
        assert!(parse::<ClearRequest>(b"[5]").is_err());
        assert!(parse::<RegisterRequest>(br#"["c1"]"#).is_err());
        assert!(parse::<AppendRequest>(br#"[[{"type":"MARK"}]]"#).is_err());
        assert!(parse::<AppendRequest>(br#"{"records":[["MARK"]]}"#).is_err());
        // Objects still read as before, unknown members still refused.
        assert_eq!(parse::<ClearRequest>(br#"{"index":5}"#).unwrap().index, 5);
        assert!(parse::<ClearRequest>(br#"{"index":5,"x":1}"#).is_err());
        let r: RegisterRequest = parse(br#"{"name":"c1","mask":"MARK"}"#).unwrap();
        assert_eq!((r.name.as_str(), r.mask.as_deref()), ("c1", Some("MARK")));
    }

    #[test]
    fn a_mask_is_a_string_or_absent_never_null() {
        let r: RegisterRequest = parse(br#"{"name":"c1"}"#).unwrap();
        assert_eq!(r.mask, None);
        let e = parse::<RegisterRequest>(br#"{"name":"c1","mask":null}"#).unwrap_err();
        assert!(e.to_string().contains("expected a string"), "{e}");
    }

    #[test]
    fn whole_numbers_may_be_written_as_floats_but_fractions_are_refused() {
        // JSON Schema's `integer` takes 2.0 and 2e0 (the document's
        // schemas are JSON Schema); serde's u64 took neither.
        assert_eq!(parse::<ClearRequest>(br#"{"index":2.0}"#).unwrap().index, 2);
        assert_eq!(parse::<ClearRequest>(br#"{"index":2e0}"#).unwrap().index, 2);
        let max = parse::<ClearRequest>(br#"{"index":18446744073709551615}"#).unwrap();
        assert_eq!(max.index, u64::MAX);
        for bad in [
            &br#"{"index":2.5}"#[..],
            br#"{"index":-1}"#,
            br#"{"index":-1.0}"#,
            br#"{"index":1.8446744073709552e19}"#,
            br#"{"index":"2"}"#,
        ] {
            let e = parse::<ClearRequest>(bad).unwrap_err();
            assert!(
                e.to_string().contains("expected a whole number from 0 to"),
                "{}: {e}",
                String::from_utf8_lossy(bad)
            );
        }
        let r: AppendRequest = parse(
            br#"{"records":[{"type":1.0,"flags":3e0,"name":[104.0,105],"fields":{"k":[255.0]}}]}"#,
        )
        .unwrap();
        let rec = &r.records[0];
        assert_eq!((rec.kind.0, rec.flags), (RecordType::CREAT, 3));
        assert_eq!(rec.name.0, b"hi");
        assert_eq!(rec.fields.0[0].1.0, [255]);
        for bad in [
            &br#"{"records":[{"type":1.5}]}"#[..],
            br#"{"records":[{"type":65536.0}]}"#,
            br#"{"records":[{"type":"MARK","flags":0.5}]}"#,
            br#"{"records":[{"type":"MARK","flags":65536}]}"#,
            br#"{"records":[{"type":"MARK","name":[256.0]}]}"#,
            br#"{"records":[{"type":"MARK","fields":{"k":[0.5]}}]}"#,
        ] {
            assert!(
                parse::<AppendRequest>(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// A record of `n` fields with distinct keys, as JSON.
    fn record_with_fields(n: usize) -> Vec<u8> {
        let fields: Vec<String> = (0..n).map(|i| format!("\"k{i}\":\"v\"")).collect();
        format!(
            r#"{{"records":[{{"type":"MARK","fields":{{{}}}}}]}}"#,
            fields.join(",")
        )
        .into_bytes()
    }

    #[test]
    fn a_record_of_more_fields_than_the_format_holds_is_refused_early() {
        // Regression: each key was compared with every key before it, so a
        // 1 MiB body of about 90,000 keys took seconds to parse, before the
        // record was refused for having more than 1024 fields.
        let most = parse::<AppendRequest>(&record_with_fields(MAX_FIELDS)).unwrap();
        assert_eq!(most.records[0].fields.0.len(), MAX_FIELDS);
        let e = parse::<AppendRequest>(&record_with_fields(90_000)).unwrap_err();
        assert!(e.to_string().contains("at most 1024 fields"), "{e}");
    }
}
