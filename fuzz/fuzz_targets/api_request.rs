//! Fuzzes the daemon API's parsers of request input: the first request
//! head of a connection, query strings (every route's typed parameters)
//! and JSON bodies (append, register, clear).
//!
//! Property: parsing never panics; a head judged good stays good whatever
//! follows it; and a query that parses has at most `MAX_PARAMS` pairs,
//! each of which decodes to UTF-8.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_daemon::api::head::{self, Check};
use weir_daemon::api::query::{
    DevicesQuery, FsChangesQuery, FsRescanQuery, MAX_PARAMS, MountsQuery, RecordsQuery,
    parse_empty, parse_pairs,
};
use weir_daemon::api::requests::{AppendRequest, ClearRequest, RegisterRequest, parse};

fuzz_target!(|data: &[u8]| {
    if head::check(data) == Check::Good {
        let mut more = data.to_vec();
        more.extend_from_slice(b"\r\nbody");
        assert_eq!(head::check(&more), Check::Good);
    }
    let _ = parse::<AppendRequest>(data);
    let _ = parse::<RegisterRequest>(data);
    let _ = parse::<ClearRequest>(data);
    let Ok(q) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(pairs) = parse_pairs(q) {
        assert!(pairs.len() <= MAX_PARAMS);
    }
    let _ = RecordsQuery::parse(Some(q));
    let _ = MountsQuery::parse(Some(q));
    let _ = DevicesQuery::parse(Some(q));
    let roots = [
        FsChangesQuery::parse(Some(q)).map(|c| c.root),
        FsRescanQuery::parse(Some(q)).map(|r| r.root),
    ];
    for root in roots.into_iter().flatten() {
        assert_eq!(root.first(), Some(&b'/'));
    }
    let _ = parse_empty(Some(q));
});
