//! Fuzzes the uevent parser, which reads netlink messages in the kernel's
//! format and udevd's `libudev` one (and, before the sender check, whatever
//! else reaches the socket).
//!
//! Property: no panic; a message that parses renders back (in its own
//! format) to a message that parses to the same event, and a kernel-format
//! one renders to exactly the bytes it came from.
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_devices::uevent::{Source, parse, render, render_libudev};

fuzz_target!(|data: &[u8]| {
    let Ok(ev) = parse(data) else {
        return;
    };
    match ev.source {
        Source::Kernel => {
            let rendered = render(&ev);
            assert_eq!(rendered, data, "a kernel message renders to its bytes");
            assert_eq!(parse(&rendered).expect("rendered event parses"), ev);
        }
        Source::Udev => {
            let again = parse(&render_libudev(&ev)).expect("rendered event parses");
            assert_eq!(again, ev);
        }
    }
});
