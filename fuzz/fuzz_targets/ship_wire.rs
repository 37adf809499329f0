//! Fuzzes the decoder of shipped records (what `weir fleet` reads from a
//! broker, written by any host or by anyone with access to the stream)
//! and the host tokens of subjects.
//!
//! Property: decoding never panics; a record that decodes encodes back to
//! bytes that decode to the same record; a token that names a host is
//! the token of that host.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_ship::wire::{decode, encode, host_from_token, host_token};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = decode(data) {
        let again = encode(&s.host, s.incarnation, &s.record);
        let back = decode(again.as_bytes()).expect("an encoded record decodes");
        assert_eq!(back, s);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(host_from_token(&host_token(text)).as_deref(), Some(text));
        if let Some(host) = host_from_token(text) {
            assert_eq!(host_token(&host), text);
        }
    }
});
