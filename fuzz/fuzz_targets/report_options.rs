//! Fuzzes the table options the CLI and the API's query take from outside:
//! `-o` column lists of `pvs`, `vgs`, `lvs`, `devices` and `mounts`, and
//! LVM's `--units`.
//!
//! Property: parsing never panics; parsed units print any size without a
//! panic, on one line, and bytes (`b`) print exactly.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_view::devices_columns::DevColumns;
use weir_view::lvm_columns::Columns;
use weir_view::lvm_units::Units;
use weir_view::lvm_view::Listing;
use weir_view::mounts_table;

fuzz_target!(|data: &[u8]| {
    let (size, text) = match data {
        [a, b, c, d, e, f, g, h, rest @ ..] => {
            (u64::from_le_bytes([*a, *b, *c, *d, *e, *f, *g, *h]), rest)
        }
        _ => (0, data),
    };
    let Ok(s) = std::str::from_utf8(text) else {
        return;
    };
    for listing in [Listing::Pvs, Listing::Vgs, Listing::Lvs, Listing::Devices] {
        let _ = Columns::parse(listing, s);
    }
    let _ = DevColumns::parse(s);
    let _ = mounts_table::Columns::parse(s);
    if let Ok(units) = Units::parse(s) {
        for u in [units, units.without_suffix()] {
            let printed = u.size(size);
            assert!(
                !printed.is_empty() && !printed.contains('\n'),
                "{s:?} {size}: {printed:?}"
            );
        }
    }
    assert_eq!(
        Units::parse("b").unwrap().without_suffix().size(size),
        size.to_string()
    );
});
