//! Fuzzes what `weir log tail` reads from its command line: the times of
//! `--since`/`--until` (journalctl's syntax) and the `KEY=VALUE`, device
//! and mount-point matches.
//!
//! Property: parsing never panics; a relative time is now plus or minus
//! its span; a parsed match judges any record without a panic; a JSON
//! record line reads back into the record it shows.
#![no_main]
#![forbid(unsafe_code)]

use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use libfuzzer_sys::fuzz_target;
use weir_log::{LogRecord, RecordType};
use weir_view::log_select::{Filter, Match};
use weir_view::log_time::{parse_time, span_ns};
use weir_view::record::{record_from_json, record_json};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    // A fixed instant and a zone with clock changes (New York's rule,
    // without a TZ database), so that a run is repeatable and gaps and
    // folds are reached.
    let tz = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").expect("a POSIX zone");
    let now: Zoned = Timestamp::from_second(1_710_053_999)
        .expect("a fixed instant")
        .to_zoned(tz);
    let parsed = parse_time(s, &now);
    if let (Some(rest), Ok(t)) = (s.trim().strip_prefix('-'), &parsed) {
        let span = span_ns(rest).expect("a relative time's span parses");
        assert_eq!(*t, now.timestamp().as_nanosecond() - span);
    }
    if let Ok(m) = Match::parse(s) {
        let r = LogRecord {
            index: 1,
            time_ns: 0,
            kind: RecordType::PV_FOUND,
            flags: 0,
            target: vec![],
            parent: vec![],
            name: data.to_vec(),
            fields: vec![("dev".to_owned(), data.to_vec())],
        };
        let _ = Filter::new().with_match(m).accepts(&r);
        let back = record_from_json(&record_json(&r)).expect("a record line reads back");
        assert_eq!(back, r);
    }
});
