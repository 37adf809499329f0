//! Fuzzes the /proc/self/mountinfo parser and its escape decoder, which
//! read text that anyone able to mount (a user namespace, a FUSE daemon
//! naming its source) partly writes.
//!
//! Property: neither panics; a decoded field survives encoding; a parsed
//! table has one mount per line, and written back in mountinfo form
//! (`render`) it parses to the same table and renders to the same bytes.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_mounts::escape::{decode, encode};
use weir_mounts::mountinfo::{parse, render};

fuzz_target!(|data: &[u8]| {
    let decoded = decode(data);
    assert_eq!(&*decode(&encode(&decoded)), &*decoded);

    let Ok(table) = parse(data) else {
        return;
    };
    let lines = data.strip_suffix(b"\n").unwrap_or(data);
    let lines = if data.is_empty() {
        0
    } else {
        lines.iter().filter(|&&b| b == b'\n').count() + 1
    };
    assert_eq!(table.len(), lines);
    let rendered = render(&table);
    let again = parse(&rendered).expect("rendered table parses");
    assert_eq!(
        again,
        table,
        "rendered {:?}",
        String::from_utf8_lossy(&rendered)
    );
    assert_eq!(render(&again), rendered);
});
