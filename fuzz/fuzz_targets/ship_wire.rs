//! Fuzzes the decoder of shipped records (what `weir fleet` reads from a
//! broker, written by any host or by anyone with access to the stream),
//! the host tokens of subjects, and the positions a Kafka shipper
//! commits.
//!
//! Property: decoding never panics; a record that decodes encodes back to
//! bytes that decode to the same record; a token that names a host is
//! the token of that host; a position that parses is written back the
//! same.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_ship::wire::{
    commit_position, decode, encode, host_from_token, host_token, parse_commit_position,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = decode(data) {
        let again = encode(&s.host, s.incarnation, &s.record);
        let back = decode(again.as_bytes()).expect("an encoded record decodes");
        assert_eq!(back, s);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok((inc, index)) = parse_commit_position(text) {
            assert_eq!(commit_position(inc, index), text);
        }
        assert_eq!(host_from_token(&host_token(text)).as_deref(), Some(text));
        if let Some(host) = host_from_token(text) {
            assert_eq!(host_token(&host), text);
        }
    }
});
