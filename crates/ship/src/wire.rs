//! The record on the wire, and the names it travels under.
//!
//! A shipped record is one JSON object: `schema`, `host` and
//! `incarnation`, then the keys of the log's JSON form (`weir log tail
//! --json`) in the same order. `docs/fleet.md` states the schema for
//! readers in other languages. The subject and message id are made from
//! the host's *token*, its name with every byte outside `[A-Za-z0-9_-]`
//! written `%XX`, so that any host name is one subject token and no two
//! names share one.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use weir_log::{Incarnation, LogRecord, RecordType};
use weir_view::record::{record_from_json, record_json};

/// The schema version this build writes and reads.
pub const SCHEMA: u32 = 1;

/// The first token of every record subject: `weir.<host>.<TYPE>`.
pub const SUBJECT_PREFIX: &str = "weir";

/// The longest host name shipped, in bytes: what DNS allows, and short
/// enough that an escaped token stays well inside a subject's limits.
pub const MAX_HOST: usize = 255;

/// A host's progress message, on `weir-status.<host>`: how far its log
/// goes and how far the broker has it, for `weir fleet status`'s lag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The host's name.
    pub host: String,
    /// The incarnation of its log.
    pub incarnation: String,
    /// The log's last index.
    pub last_index: u64,
    /// The last index the broker had acknowledged.
    pub acked_index: u64,
    /// When it was put, ns since the epoch.
    pub time: u64,
}

/// A record as it arrives from the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipped {
    /// The host that shipped it.
    pub host: String,
    /// The incarnation of the host's log.
    pub incarnation: Incarnation,
    /// The record, its index included.
    pub record: LogRecord,
}

/// Bytes that are not a shipped record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Not UTF-8 text.
    #[error("a shipped record is UTF-8 JSON; this is not UTF-8")]
    NotUtf8,
    /// Not a JSON object with `schema`, `host` and `incarnation`.
    #[error("not a shipped record: {0}")]
    Envelope(#[source] serde_json::Error),
    /// A schema this build does not read.
    #[error("shipped record schema {found}; this build reads schema {SCHEMA}")]
    Schema {
        /// The schema the record says it has.
        found: u32,
    },
    /// The incarnation is not 32 lowercase hex digits.
    #[error("a shipped record's incarnation is not 32 lowercase hex digits")]
    Incarnation,
    /// A committed position is not `weir<schema> <incarnation> <index>`.
    #[error("a committed position is not \"weir{SCHEMA} <incarnation> <index>\"")]
    Position,
    /// The record's own keys are wrong.
    #[error("a shipped record's body is not a record: {0}")]
    Record(#[source] weir_view::record::RecordJsonError),
}

/// A host name that cannot be shipped under.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The empty name.
    #[error("a host name cannot be empty")]
    Empty,
    /// A name longer than [`MAX_HOST`] bytes.
    #[error("a host name is at most {MAX_HOST} bytes; this one is {0}")]
    TooLong(usize),
}

/// The host's name, checked.
pub fn check_host(host: &str) -> Result<(), HostError> {
    match host.len() {
        0 => Err(HostError::Empty),
        n if n > MAX_HOST => Err(HostError::TooLong(n)),
        _ => Ok(()),
    }
}

/// Whether a token keeps byte `b` as itself.
fn kept(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The host's subject token: its bytes, with those outside
/// `[A-Za-z0-9_-]` as `%XX` (uppercase hex). Dots, spaces and NATS's
/// wildcards cannot reach a subject.
pub fn host_token(host: &str) -> String {
    let mut out = String::with_capacity(host.len());
    for b in host.bytes() {
        if kept(b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The host a token names, or `None` if it is no token [`host_token`]
/// makes.
pub fn host_from_token(token: &str) -> Option<String> {
    let b = token.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = token.get(i + 1..i + 3)?;
                // Two uppercase hex digits: from_str_radix alone would take
                // a sign ("+0") and lowercase.
                if !hex
                    .bytes()
                    .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c))
                {
                    return None;
                }
                let v = u8::from_str_radix(hex, 16).ok()?;
                // A byte the token keeps as itself is never escaped.
                if kept(v) {
                    return None;
                }
                out.push(v);
                i += 3;
            }
            c if kept(c) => {
                out.push(c);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// The subject a record of `kind` from `host` is published on.
pub fn subject(host_token: &str, kind: RecordType) -> String {
    format!("{SUBJECT_PREFIX}.{host_token}.{kind}")
}

/// The subjects of every record of one host: `weir.<host>.>`.
pub fn host_subjects(host_token: &str) -> String {
    format!("{SUBJECT_PREFIX}.{host_token}.>")
}

/// The `Nats-Msg-Id` of a record: host, incarnation and index, which name
/// it for good. A retried publish carries the same id, so the broker drops
/// the copy within its duplicate window.
pub fn message_id(host_token: &str, incarnation: Incarnation, index: u64) -> String {
    format!("{host_token}:{incarnation}:{index}")
}

/// The position a host's shipper commits with each Kafka transaction, as
/// the metadata of its group's offset: `weir1 <incarnation> <index>`, the
/// last record the transaction holds.
pub fn commit_position(incarnation: Incarnation, index: u64) -> String {
    format!("weir{SCHEMA} {incarnation} {index}")
}

/// A committed position read back: the incarnation and index it names.
pub fn parse_commit_position(text: &str) -> Result<(Incarnation, u64), WireError> {
    let mut parts = text.split(' ');
    let (Some(tag), Some(inc), Some(index), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(WireError::Position);
    };
    let found = tag
        .strip_prefix("weir")
        .and_then(|v| v.parse::<u32>().ok())
        .ok_or(WireError::Position)?;
    if found != SCHEMA {
        return Err(WireError::Schema { found });
    }
    let inc: Incarnation = inc.parse().map_err(|_| WireError::Incarnation)?;
    // Digits only: no sign, no spaces, and what was written reads back.
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return Err(WireError::Position);
    }
    let index = index.parse().map_err(|_| WireError::Position)?;
    Ok((inc, index))
}

/// A record as it is published: its JSON form with `schema`, `host` and
/// `incarnation` first.
pub fn encode(host: &str, incarnation: Incarnation, r: &LogRecord) -> String {
    Envelope::new(host, incarnation).encode(r)
}

/// What every record of one host and log incarnation shares on the wire,
/// rendered once per session: a shipper encodes thousands of records a
/// second, and escaping the host and formatting the incarnation for each
/// was a good part of its CPU.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// `{"schema":1,"host":"…","incarnation":"…",`
    head: String,
    /// `<token>:<incarnation>:`, the message id before its index.
    id_head: String,
    /// `weir.<token>.`, the subject before its type.
    subject_head: String,
}

impl Envelope {
    /// The envelope of `host`'s records in `incarnation`.
    pub fn new(host: &str, incarnation: Incarnation) -> Self {
        let token = host_token(host);
        Envelope {
            head: format!(
                "{{\"schema\":{SCHEMA},\"host\":{},\"incarnation\":\"{incarnation}\",",
                serde_json::Value::from(host)
            ),
            id_head: format!("{token}:{incarnation}:"),
            subject_head: format!("{SUBJECT_PREFIX}.{token}."),
        }
    }

    /// The record on the wire, as [`encode`].
    pub fn encode(&self, r: &LogRecord) -> String {
        let body = record_json(r);
        let mut out = String::with_capacity(self.head.len() + body.len());
        out.push_str(&self.head);
        // The log's form is an object with at least its index: everything
        // after its opening brace follows on.
        out.push_str(&body[1..]);
        out
    }

    /// The record's id, as [`message_id`].
    pub fn message_id(&self, index: u64) -> String {
        let mut id = String::with_capacity(self.id_head.len() + 20);
        id.push_str(&self.id_head);
        let _ = write!(id, "{index}");
        id
    }

    /// The subject of a record of `kind`, as [`subject`].
    pub fn subject(&self, kind: RecordType) -> String {
        let mut s = String::with_capacity(self.subject_head.len() + 8);
        s.push_str(&self.subject_head);
        let _ = write!(s, "{kind}");
        s
    }
}

/// A line of `weir fleet tail --json`: the record's JSON form with `host`
/// first.
pub fn fleet_line(host: &str, r: &LogRecord) -> String {
    let body = record_json(r);
    format!(
        "{{\"host\":{},{}",
        serde_json::Value::from(host),
        &body[1..]
    )
}

/// Decodes a published record. Keys it does not know are ignored, so a
/// reader keeps working when a later build of the same schema adds some.
pub fn decode(bytes: &[u8]) -> Result<Shipped, WireError> {
    #[derive(Deserialize)]
    struct Envelope {
        schema: u32,
        host: String,
        incarnation: String,
    }
    let text = std::str::from_utf8(bytes).map_err(|_| WireError::NotUtf8)?;
    let e: Envelope = serde_json::from_str(text).map_err(WireError::Envelope)?;
    if e.schema != SCHEMA {
        return Err(WireError::Schema { found: e.schema });
    }
    let incarnation = e.incarnation.parse().map_err(|_| WireError::Incarnation)?;
    let record = record_from_json(text).map_err(WireError::Record)?;
    Ok(Shipped {
        host: e.host,
        incarnation,
        record,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record() -> LogRecord {
        LogRecord {
            index: 42,
            time_ns: 1_700_000_000_123_456_789,
            kind: RecordType::CREAT,
            flags: 0,
            target: vec![1, 2, 3],
            parent: vec![],
            name: b"a\nb\xff".to_vec(),
            fields: vec![("path".into(), b"x/a\nb\xff".to_vec())],
        }
    }

    const INC: Incarnation = Incarnation([0xab; 16]);

    #[test]
    fn positions_are_exact_or_refused() {
        let text = commit_position(INC, 7);
        assert_eq!(text, format!("weir1 {INC} 7"));
        assert_eq!(parse_commit_position(&text).unwrap(), (INC, 7));
        let bad = [
            String::new(),
            "weir1".into(),
            format!("weir1 {INC}"),
            format!("weir1 {INC} "),
            format!("weir1 {INC} +7"),
            format!("weir1 {INC} 7 8"),
            format!("weir1  {INC} 7"),
            format!("weir1 {INC} 99999999999999999999999"),
            format!("wier1 {INC} 7"),
            "weir1 ABABABABABABABABABABABABABABABAB 7".into(),
        ];
        for b in &bad {
            assert!(parse_commit_position(b).is_err(), "{b:?}");
        }
        assert!(matches!(
            parse_commit_position(&format!("weir2 {INC} 7")),
            Err(WireError::Schema { found: 2 })
        ));
    }

    #[test]
    fn the_envelope_comes_first_and_the_log_form_follows() {
        let line = encode("db-1.example", INC, &record());
        let body = record_json(&record());
        assert_eq!(
            line,
            format!(
                "{{\"schema\":1,\"host\":\"db-1.example\",\"incarnation\":\"{INC}\",{}",
                &body[1..]
            )
        );
        let back = decode(line.as_bytes()).unwrap();
        assert_eq!(back.host, "db-1.example");
        assert_eq!(back.incarnation, INC);
        assert_eq!(back.record, record());
        let fleet = fleet_line("h", &record());
        assert!(
            fleet.starts_with("{\"host\":\"h\",\"index\":42,"),
            "{fleet}"
        );
    }

    #[test]
    fn tokens_escape_what_a_subject_cannot_hold() {
        assert_eq!(host_token("db-1_a"), "db-1_a");
        assert_eq!(
            host_token("db.example com*>%"),
            "db%2Eexample%20com%2A%3E%25"
        );
        assert_eq!(host_token("é"), "%C3%A9");
        assert_eq!(subject("h%2Ex", RecordType::CREAT), "weir.h%2Ex.CREAT");
        assert_eq!(message_id("h", INC, 7), format!("h:{INC}:7"));
        for bad in ["%2e", "%41", "%", "%4", "%+0", "%-1", "a.b", "a b", "%FF"] {
            assert_eq!(host_from_token(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_records_get_their_own_errors() {
        let good = encode("h", INC, &record());
        assert!(matches!(decode(b"\xff"), Err(WireError::NotUtf8)));
        assert!(matches!(decode(b"[]"), Err(WireError::Envelope(_))));
        let v2 = good.replacen("\"schema\":1", "\"schema\":2", 1);
        assert!(matches!(
            decode(v2.as_bytes()),
            Err(WireError::Schema { found: 2 })
        ));
        let inc = good.replacen(&INC.to_string(), "AB", 1);
        assert!(matches!(
            decode(inc.as_bytes()),
            Err(WireError::Incarnation)
        ));
        let body = good.replacen("\"index\":42", "\"index\":\"x\"", 1);
        assert!(matches!(decode(body.as_bytes()), Err(WireError::Record(_))));
        assert_eq!(check_host(""), Err(HostError::Empty));
        assert_eq!(check_host(&"a".repeat(256)), Err(HostError::TooLong(256)));
    }

    proptest! {
        #[test]
        fn any_host_token_round_trips(host in "\\PC{1,40}") {
            let t = host_token(&host);
            prop_assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'%'));
            prop_assert_eq!(host_from_token(&t), Some(host));
        }

        #[test]
        fn any_position_round_trips(inc in any::<[u8; 16]>(), index in any::<u64>()) {
            let text = commit_position(Incarnation(inc), index);
            prop_assert_eq!(parse_commit_position(&text).unwrap(), (Incarnation(inc), index));
        }

        #[test]
        fn any_text_that_parses_as_a_position_is_one(text in "(weir1 )?[0-9a-f ]{0,40}[0-9]{0,21}") {
            if let Ok((inc, index)) = parse_commit_position(&text) {
                prop_assert_eq!(commit_position(inc, index), text);
            }
        }

        #[test]
        fn any_record_round_trips(
            host in "\\PC{1,20}",
            inc in any::<[u8; 16]>(),
            index in 1u64..u64::MAX >> 1,
            time in any::<u64>(),
            kind in any::<u16>(),
            flags in any::<u16>(),
            target in proptest::collection::vec(any::<u8>(), 0..40),
            name in proptest::collection::vec(any::<u8>(), 0..40),
            fields in proptest::collection::vec(("[a-z]{1,8}", proptest::collection::vec(any::<u8>(), 0..20)), 0..4),
        ) {
            let r = LogRecord {
                index, time_ns: time, kind: RecordType(kind), flags, target, parent: vec![9],
                name, fields,
            };
            let line = encode(&host, Incarnation(inc), &r);
            let back = decode(line.as_bytes()).unwrap();
            prop_assert_eq!(back, Shipped { host, incarnation: Incarnation(inc), record: r });
        }

        #[test]
        fn an_envelope_names_as_the_functions_do(
            host in "\\PC{1,20}",
            inc in any::<[u8; 16]>(),
            index in any::<u64>(),
            kind in any::<u16>(),
        ) {
            let (inc, kind) = (Incarnation(inc), RecordType(kind));
            let env = Envelope::new(&host, inc);
            let token = host_token(&host);
            prop_assert_eq!(env.message_id(index), message_id(&token, inc, index));
            prop_assert_eq!(env.subject(kind), subject(&token, kind));
        }

        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }
    }
}
