//! Decoding inotify events from the bytes `read(2)` returned.
//!
//! Each event is a 16-byte `struct inotify_event` (`wd`, `mask`, `cookie`,
//! `len`) followed by `len` bytes of name: the name, a NUL, and NULs up to
//! a multiple of 16. A watch on a file gets events with `len` 0. Every step
//! consumes at least 16 bytes and at most [`NAME_LEN_MAX`] more, and every
//! length is checked against the buffer, so hostile bytes give a
//! [`DecodeError`], never a panic or an endless loop.

use super::{Event, Wd};
use crate::bytes::{i32_at, len, u32_at};

/// The size of a `struct inotify_event` without its name.
pub(super) const HEADER_LEN: usize = 16;
/// The longest `len` accepted: `PATH_MAX`. A name in an event is a path
/// component the kernel once looked up, which fits `PATH_MAX` with its NUL
/// (in practice `NAME_MAX`, 255, padded to 256); anything longer is not a
/// kernel record.
pub(super) const NAME_LEN_MAX: usize = 4096;

/// Why a buffer of inotify events does not decode. `at` is the byte offset
/// of the event that failed; the events before it decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer than 16 bytes are left for the event's header.
    #[error("inotify event at byte {at}: header truncated")]
    Truncated {
        /// The event's offset.
        at: usize,
    },
    /// The event's `len` is larger than any name the kernel reports.
    #[error("inotify event at byte {at}: name length {len} above {NAME_LEN_MAX}")]
    NameTooLong {
        /// The event's offset.
        at: usize,
        /// Its `len` field.
        len: u32,
    },
    /// The event's name runs past the end of the buffer.
    #[error("inotify event at byte {at}: name of {len} bytes past the end of the buffer")]
    NameOverrun {
        /// The event's offset.
        at: usize,
        /// Its `len` field.
        len: u32,
    },
    /// The event's name has no NUL within its `len` bytes.
    #[error("inotify event at byte {at}: name without its NUL")]
    NameUnterminated {
        /// The event's offset.
        at: usize,
    },
}

/// Decodes a buffer of inotify events, appending them to `out`.
///
/// Pure and total on hostile bytes: a header cut short, a name longer than
/// [`NAME_LEN_MAX`], past the buffer or without a NUL gives a
/// [`DecodeError`]; the events decoded before it stay in `out`. The other
/// fields are taken as they come (the kernel's `wd` of an overflow is -1).
/// The name is the bytes before the first NUL, so the padding after it is
/// not checked.
pub fn decode_events(buf: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
    let mut at = 0;
    while at < buf.len() {
        let Some(head) = buf.get(at..).and_then(|b| b.get(..HEADER_LEN)) else {
            return Err(DecodeError::Truncated { at });
        };
        // Inside `head` every read succeeds; the defaults keep this total.
        let wd = i32_at(head, 0).unwrap_or(-1);
        let mask = u32_at(head, 4).unwrap_or(0);
        let cookie = u32_at(head, 8).unwrap_or(0);
        let name_len = u32_at(head, 12).unwrap_or(0);
        let n = len(name_len);
        if n > NAME_LEN_MAX {
            return Err(DecodeError::NameTooLong { at, len: name_len });
        }
        let start = at + HEADER_LEN;
        let Some(padded) = buf.get(start..).and_then(|b| b.get(..n)) else {
            return Err(DecodeError::NameOverrun { at, len: name_len });
        };
        let name = if n == 0 {
            Vec::new()
        } else {
            let Some(nul) = padded.iter().position(|&b| b == 0) else {
                return Err(DecodeError::NameUnterminated { at });
            };
            padded[..nul].to_vec()
        };
        out.push(Event {
            wd: Wd(wd),
            mask,
            cookie,
            name,
        });
        at = start + n;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
