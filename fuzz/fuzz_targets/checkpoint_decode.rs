//! Fuzzes the decoder of the daemon's checkpoint file
//! (`<state-dir>/inventory`): the header, its CRC and the postcard payload
//! holding the last-logged mount table and device inventory.
//!
//! Property: decoding never panics, and whatever decodes encodes back to a
//! file that decodes to the same checkpoint.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_daemon::checkpoint::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = decode(data) {
        let again = encode(&c).expect("a decoded checkpoint encodes");
        assert_eq!(decode(&again).expect("an encoded checkpoint decodes"), c);
    }
});
