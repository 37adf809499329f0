//! [`render`] and [`render_libudev`]: a [`Uevent`] back into the wire
//! formats, for round-trip tests, fuzzing and replaying recorded events.

use super::Uevent;
use super::parse::{UDEV_HEADER_LEN, UDEV_MAGIC, UDEV_PREFIX};

/// The kernel format: `ACTION@DEVPATH\0` then every property as
/// `KEY=VALUE\0`, in order. For an event [`parse`](super::parse) returned,
/// parsing the result gives the same event with [`Source::Kernel`].
///
/// [`Source::Kernel`]: super::Source::Kernel
pub fn render(ev: &Uevent) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(ev.action.as_str().as_bytes());
    out.push(b'@');
    out.extend_from_slice(ev.devpath.as_bytes());
    out.push(0);
    push_props(&mut out, ev);
    out
}

/// udevd's format: the 40-byte `libudev` header (filter hashes zero), then
/// the properties.
pub fn render_libudev(ev: &Uevent) -> Vec<u8> {
    let mut props = Vec::new();
    push_props(&mut props, ev);
    let header_len = UDEV_HEADER_LEN as u32;
    // Saturates: a block over 4 GiB is refused by the parser anyway.
    let props_len = u32::try_from(props.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(UDEV_HEADER_LEN + props.len());
    out.extend_from_slice(UDEV_PREFIX);
    out.extend_from_slice(&UDEV_MAGIC.to_be_bytes());
    out.extend_from_slice(&header_len.to_ne_bytes());
    out.extend_from_slice(&header_len.to_ne_bytes());
    out.extend_from_slice(&props_len.to_ne_bytes());
    out.resize(UDEV_HEADER_LEN, 0);
    out.extend_from_slice(&props);
    out
}

fn push_props(out: &mut Vec<u8>, ev: &Uevent) {
    for (k, v) in &ev.props {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v);
        out.push(0);
    }
}
