//! Decoding fanotify mount events from the bytes `read(2)` returned.
//!
//! Each event is a 24-byte `struct fanotify_event_metadata` (`event_len`,
//! `vers`, `reserved`, `metadata_len`, `mask`, `fd`, `pid`) followed, up to
//! `event_len`, by info records (`info_type`, `pad`, `len`, payload). The
//! mount record (type 7) holds the unique mount id at offset 8. Every length
//! is bounds-checked and every step consumes at least 24 bytes, so hostile
//! bytes give [`Error::Malformed`], never a panic or an endless loop.

use std::os::fd::RawFd;

use super::{
    FAN_EVENT_INFO_TYPE_MNT, FAN_MNT_ATTACH, FAN_MNT_DETACH, FAN_Q_OVERFLOW,
    FANOTIFY_METADATA_VERSION, MountEvent,
};
use crate::bytes::{i32_at, len, u16_at, u32_at, u64_at};
use crate::{Error, Result};

/// `FAN_EVENT_METADATA_LEN`: the fixed part of every event.
pub(super) const METADATA_LEN: usize = 24;
/// The size of a `struct fanotify_event_info_header`.
pub(super) const INFO_HEADER_LEN: usize = 4;
/// The size of a mount info record: header, pad to 8, `__u64 mnt_id`.
pub(super) const INFO_MNT_LEN: usize = 16;

/// Decodes a buffer of fanotify events, appending them to `out`.
///
/// Pure and total on hostile bytes: a truncated event, `event_len` below 24
/// or beyond the buffer, an unknown metadata version, an info record of
/// length 0 or overrunning its event, or a mount event without a mount
/// record gives [`Error::Malformed`]. Info records of other types and
/// events of other kinds are skipped. Events decoded before an error stay
/// in `out`.
///
/// Any fd an event carries is dropped from view here: use
/// [`decode_events_with_fds`] when the bytes came from a real `read` and the
/// fds must be closed.
pub fn decode_events(buf: &[u8], out: &mut Vec<MountEvent>) -> Result<()> {
    let mut fds = Vec::new();
    decode_events_with_fds(buf, out, &mut fds)
}

/// [`decode_events`], also appending to `fds` every event fd >= 0 it finds,
/// so that the caller can close them. An event's fd is reported as soon as
/// its length checks pass, before its other fields are checked, so even a
/// malformed batch leaks nothing that could be found.
pub fn decode_events_with_fds(
    buf: &[u8],
    out: &mut Vec<MountEvent>,
    fds: &mut Vec<RawFd>,
) -> Result<()> {
    let mut rest = buf;
    while !rest.is_empty() {
        let Some(meta) = rest.get(..METADATA_LEN) else {
            return Err(Error::Malformed {
                what: "fanotify event shorter than its metadata",
            });
        };
        // Inside `meta` every read succeeds; the defaults keep this total.
        let event_len = len(u32_at(meta, 0).unwrap_or(0));
        let vers = meta[4];
        let metadata_len = usize::from(u16_at(meta, 6).unwrap_or(0));
        let mask = u64_at(meta, 8).unwrap_or(0);
        let fd = i32_at(meta, 16).unwrap_or(-1);
        if event_len < METADATA_LEN {
            return Err(Error::Malformed {
                what: "fanotify event_len below the metadata size",
            });
        }
        let Some(event) = rest.get(..event_len) else {
            return Err(Error::Malformed {
                what: "fanotify event_len beyond the buffer",
            });
        };
        rest = &rest[event_len..];
        if fd >= 0 {
            fds.push(fd);
        }
        if vers != FANOTIFY_METADATA_VERSION {
            return Err(Error::Malformed {
                what: "fanotify metadata version",
            });
        }
        if metadata_len < METADATA_LEN || metadata_len > event_len {
            return Err(Error::Malformed {
                what: "fanotify metadata_len out of range",
            });
        }
        if mask & FAN_Q_OVERFLOW != 0 {
            out.push(MountEvent::Overflow);
            continue;
        }
        let attach = mask & FAN_MNT_ATTACH != 0;
        let detach = mask & FAN_MNT_DETACH != 0;
        if !attach && !detach {
            continue;
        }
        let id = mount_id(&event[metadata_len..])?.ok_or(Error::Malformed {
            what: "fanotify mount event without a mount record",
        })?;
        out.push(match (attach, detach) {
            (true, true) => MountEvent::Move(id),
            (true, false) => MountEvent::Attach(id),
            _ => MountEvent::Detach(id),
        });
    }
    Ok(())
}

/// The mount id of the first mount record among an event's info records,
/// checking that every record lies inside the event.
fn mount_id(mut info: &[u8]) -> Result<Option<u64>> {
    let mut id = None;
    while !info.is_empty() {
        let Some(rec_len) = u16_at(info, 2).map(usize::from) else {
            return Err(Error::Malformed {
                what: "fanotify info record header truncated",
            });
        };
        if rec_len < INFO_HEADER_LEN {
            return Err(Error::Malformed {
                what: "fanotify info record length below its header",
            });
        }
        let Some(rec) = info.get(..rec_len) else {
            return Err(Error::Malformed {
                what: "fanotify info record overruns its event",
            });
        };
        info = &info[rec_len..];
        if rec[0] == FAN_EVENT_INFO_TYPE_MNT && id.is_none() {
            if rec_len < INFO_MNT_LEN {
                return Err(Error::Malformed {
                    what: "fanotify mount record too short",
                });
            }
            id = u64_at(rec, 8);
        }
    }
    Ok(id)
}

#[cfg(test)]
mod tests;
