//! [`parse`]: the kernel's and libudev's uevent formats into a [`Uevent`].

use std::collections::HashSet;

use super::{Action, MAX_MESSAGE, MAX_PROPERTIES, Source, Uevent, UeventError};

/// The first 8 bytes of a message from udevd (`"libudev"` and its NUL).
pub(super) const UDEV_PREFIX: &[u8; 8] = b"libudev\0";
/// `UDEV_MONITOR_MAGIC`, stored big endian so that in-kernel socket
/// filters can test it.
pub(super) const UDEV_MAGIC: u32 = 0xfeed_cafe;
/// `sizeof(struct monitor_netlink_header)`: prefix, magic, header_size,
/// properties_off, properties_len and four filter hashes, 4 bytes each
/// after the prefix.
pub(super) const UDEV_HEADER_LEN: usize = 40;

/// Parses one uevent message, in the kernel's format or libudev's (told
/// apart by the `libudev\0` prefix, as libudev itself does).
pub fn parse(msg: &[u8]) -> Result<Uevent, UeventError> {
    if msg.is_empty() {
        return Err(UeventError::Empty);
    }
    if msg.len() > MAX_MESSAGE {
        return Err(UeventError::TooLong { len: msg.len() });
    }
    if msg.starts_with(UDEV_PREFIX) {
        parse_udev(msg)
    } else {
        parse_kernel(msg)
    }
}

/// `ACTION@DEVPATH\0KEY=VALUE\0…`; the header must repeat the `ACTION=`
/// and `DEVPATH=` properties exactly.
fn parse_kernel(msg: &[u8]) -> Result<Uevent, UeventError> {
    let nul = msg
        .iter()
        .position(|&b| b == 0)
        .ok_or(UeventError::BadHeader)?;
    let header = &msg[..nul];
    let at = header
        .iter()
        .position(|&b| b == b'@')
        .ok_or(UeventError::BadHeader)?;
    if at == 0 || header.get(at + 1) != Some(&b'/') {
        return Err(UeventError::BadHeader);
    }
    let ev = build(Source::Kernel, split_props(&msg[nul + 1..])?)?;
    if &header[..at] != ev.action.as_str().as_bytes() || &header[at + 1..] != ev.devpath.as_bytes()
    {
        return Err(UeventError::HeaderMismatch);
    }
    Ok(ev)
}

/// The libudev header, then the property block it points to. The header's
/// own fields are host-endian, apart from the magic.
fn parse_udev(msg: &[u8]) -> Result<Uevent, UeventError> {
    let bad = |what| UeventError::BadUdevHeader { what };
    if msg.len() < UDEV_HEADER_LEN {
        return Err(bad("shorter than the header"));
    }
    let magic = u32::from_be_bytes(word(msg, 8));
    if magic != UDEV_MAGIC {
        return Err(UeventError::BadMagic { magic });
    }
    let header_size = len(u32::from_ne_bytes(word(msg, 12)));
    let off = len(u32::from_ne_bytes(word(msg, 16)));
    let props_len = len(u32::from_ne_bytes(word(msg, 20)));
    if header_size < UDEV_HEADER_LEN {
        return Err(bad("header_size smaller than the header"));
    }
    if off < header_size {
        return Err(bad("properties overlap the header"));
    }
    let end = off
        .checked_add(props_len)
        .filter(|&end| end <= msg.len())
        .ok_or(bad("properties run past the message"))?;
    build(Source::Udev, split_props(&msg[off..end])?)
}

/// The 4 bytes at `off`; the caller has checked the header's length.
fn word(msg: &[u8], off: usize) -> [u8; 4] {
    let mut w = [0; 4];
    if let Some(b) = msg.get(off..off + 4) {
        w.copy_from_slice(b);
    }
    w
}

/// A header `u32` as a `usize`, saturating so a bounds check then fails.
fn len(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Splits `KEY=VALUE\0KEY=VALUE\0`: every property ends with a NUL, none
/// is empty, keys are non-empty UTF-8 and unique.
fn split_props(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, UeventError> {
    let Some(body) = bytes.strip_suffix(&[0]) else {
        return if bytes.is_empty() {
            Ok(Vec::new())
        } else {
            Err(UeventError::Unterminated)
        };
    };
    let mut props: Vec<(String, Vec<u8>)> = Vec::new();
    let mut seen = HashSet::new();
    for (index, entry) in body.split(|&b| b == 0).enumerate() {
        if index >= MAX_PROPERTIES {
            return Err(UeventError::TooManyProperties);
        }
        if entry.is_empty() {
            return Err(UeventError::EmptyProperty { index });
        }
        let eq = entry
            .iter()
            .position(|&b| b == b'=')
            .ok_or(UeventError::NoEquals { index })?;
        let key = std::str::from_utf8(&entry[..eq])
            .ok()
            .filter(|k| !k.is_empty())
            .ok_or(UeventError::BadKey { index })?;
        if !seen.insert(key) {
            return Err(UeventError::DuplicateKey {
                key: key.to_owned(),
            });
        }
        props.push((key.to_owned(), entry[eq + 1..].to_vec()));
    }
    Ok(props)
}

/// Reads the typed fields out of the properties.
fn build(source: Source, props: Vec<(String, Vec<u8>)>) -> Result<Uevent, UeventError> {
    let get = |key: &str| props.iter().find(|(k, _)| k == key).map(|(_, v)| &v[..]);
    let text = |key: &'static str| -> Result<Option<String>, UeventError> {
        get(key)
            .map(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .ok_or(UeventError::BadText { key })
            })
            .transpose()
    };
    let required = |key: &'static str| text(key)?.ok_or(UeventError::MissingKey { key });
    let number = |key: &'static str| -> Result<Option<u64>, UeventError> {
        get(key)
            .map(|v| decimal(v).ok_or(UeventError::BadNumber { key }))
            .transpose()
    };
    let number32 = |key: &'static str| -> Result<Option<u32>, UeventError> {
        number(key)?
            .map(|n| u32::try_from(n).map_err(|_| UeventError::BadNumber { key }))
            .transpose()
    };

    let action = Action::from_word(&required("ACTION")?);
    let devpath = required("DEVPATH")?;
    if !devpath.starts_with('/') {
        return Err(UeventError::BadText { key: "DEVPATH" });
    }
    Ok(Uevent {
        source,
        action,
        devpath,
        subsystem: required("SUBSYSTEM")?,
        devtype: text("DEVTYPE")?,
        devname: text("DEVNAME")?,
        major: number32("MAJOR")?,
        minor: number32("MINOR")?,
        seqnum: number("SEQNUM")?,
        diskseq: number("DISKSEQ")?,
        props,
    })
}

/// A plain decimal `u64`: digits only (no sign, no spaces), in range.
fn decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}
