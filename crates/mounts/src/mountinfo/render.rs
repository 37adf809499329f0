//! The mountinfo writer: [`Mount`]s back to the kernel's text.
//!
//! Used to show a table in the form everyone knows, and by the tests and
//! the fuzzer to check that parsing loses nothing: for any `Mount` it can
//! write, parsing the line gives the same `Mount` back.

use crate::escape::{MANGLE, escape_into, push_octal};
use crate::model::{Mount, SuperFlags};

/// `mounts` as a mountinfo text, one line each.
pub fn render(mounts: &[Mount]) -> Vec<u8> {
    let mut out = Vec::with_capacity(mounts.len() * 128);
    for m in mounts {
        render_line_into(m, &mut out);
    }
    out
}

/// `m` as one line of mountinfo, `\n` included.
pub fn render_line(m: &Mount) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    render_line_into(m, &mut out);
    out
}

/// Appends `m` as one line of mountinfo, `\n` included.
///
/// Written as the kernel writes it, using the old 32-bit ids, with three
/// liberties that keep every `Mount` readable back as itself:
/// - `propagate_from:N` is written whenever set, even without `master:N`;
/// - a `.` in the type is escaped, since the first dot starts the subtype;
/// - if the filesystem options start with a superblock flag name (`sync`),
///   its first byte is escaped so that it is not read back as the flag.
///
/// Flag bits that have no name are not written.
pub fn render_line_into(m: &Mount, out: &mut Vec<u8>) {
    push_number(m.old_id.into(), out);
    out.push(b' ');
    push_number(m.old_parent_id.into(), out);
    out.push(b' ');
    push_number(m.major.into(), out);
    out.push(b':');
    push_number(m.minor.into(), out);
    out.push(b' ');
    escape_into(&m.root, MANGLE, out);
    out.push(b' ');
    escape_into(&m.mount_point, MANGLE, out);
    out.push(b' ');
    out.extend_from_slice(m.flags.to_text().as_bytes());

    let p = &m.propagation;
    for (name, group) in [
        (&b" shared:"[..], p.shared),
        (b" master:", p.master),
        (b" propagate_from:", p.propagate_from),
    ] {
        if let Some(g) = group {
            out.extend_from_slice(name);
            push_number(g, out);
        }
    }
    if p.unbindable {
        out.extend_from_slice(b" unbindable");
    }

    out.extend_from_slice(b" - ");
    escape_into(&m.fstype, b" \t\n\\.", out);
    if let Some(sub) = &m.subtype {
        out.push(b'.');
        escape_into(sub, MANGLE, out);
    }
    out.push(b' ');
    escape_into(&m.source, MANGLE, out);
    out.push(b' ');
    out.extend_from_slice(m.super_flags.to_text().as_bytes());
    if let Some((&first, rest)) = m.fs_options.split_first() {
        out.push(b',');
        let word = m
            .fs_options
            .split(|&b| b == b',')
            .next()
            .unwrap_or_default();
        if SuperFlags::NAMED.iter().any(|(_, n)| n.as_bytes() == word) {
            push_octal(first, out);
        } else {
            escape_into(&[first], MANGLE, out);
        }
        escape_into(rest, MANGLE, out);
    }
    out.push(b'\n');
}

/// Appends `n` in decimal, without the allocation of `to_string`.
fn push_number(n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}
