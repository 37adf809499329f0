//! Fuzzes `TypeMask::parse`, which reads masks from the command line and
//! from API requests.
//!
//! Property: parsing never panics, and a parsed mask survives both of its
//! serialised forms: `Display` (what the CLI prints) and `ranges` (what
//! `consumers.json` stores), whose ranges are sorted, disjoint and not
//! adjacent.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_log::{RecordType, TypeMask};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = RecordType::parse(s);
    let Ok(m) = TypeMask::parse(s) else {
        return;
    };
    let shown = m.to_string();
    assert_eq!(
        TypeMask::parse(&shown).ok(),
        Some(m.clone()),
        "display {shown:?} of {s:?}"
    );
    let ranges = m.ranges();
    assert!(ranges.iter().all(|(a, b)| a <= b));
    assert!(
        ranges
            .windows(2)
            .all(|w| u32::from(w[0].1) + 1 < u32::from(w[1].0))
    );
    assert_eq!(TypeMask::from_ranges(&ranges), m);
});
