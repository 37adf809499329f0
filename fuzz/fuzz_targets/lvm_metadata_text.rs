//! Fuzzes the LVM metadata text parser and the VG extraction, which read
//! text from any disk plugged in (a USB stick is enough to write it).
//!
//! Property: neither panics; a parsed tree, rendered back (`render`),
//! parses to the same tree; and the VG read from the rendered text is the
//! VG read from the original (or the same error kind), so the extraction
//! depends on the tree only.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_lvm::meta::{parse_vg, vg_from_tree};
use weir_lvm::text::{parse, render};

fuzz_target!(|data: &[u8]| {
    let vg = parse_vg(data);
    let Ok(tree) = parse(data) else {
        assert!(vg.is_err());
        return;
    };
    let rendered = render(&tree);
    let again = parse(&rendered).expect("rendered tree parses");
    assert_eq!(
        again,
        tree,
        "rendered {:?}",
        String::from_utf8_lossy(&rendered)
    );
    let from_tree = vg_from_tree(&tree);
    match (&vg, &from_tree) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(weir_lvm::Error::Meta(a)), Err(b)) => assert_eq!(a, b),
        _ => panic!("parse_vg {vg:?} but vg_from_tree {from_tree:?}"),
    }
    assert_eq!(vg_from_tree(&again), from_tree);
});
