//! Decoding fanotify file-id events from the bytes `read(2)` returned,
//! without copying: every id and name borrows from the buffer.
//!
//! Each event is the 24-byte `struct fanotify_event_metadata` followed, up
//! to `event_len`, by info records. A file-id record is `info_type`, `pad`,
//! `len` (the whole record), the 8-byte fsid, then a `struct file_handle`
//! (`handle_bytes`, `handle_type`, the bytes); the named types (2, 10, 12)
//! add the entry's name and its NUL. The kernel pads every record to a
//! multiple of 4, so a length that is not one is refused. An overflow is
//! the bare metadata. Every length is checked and every step consumes at
//! least 4 bytes, so hostile bytes give a [`DecodeError`], never a panic,
//! a slice outside the buffer or an endless loop.

use super::{
    FAN_EVENT_INFO_TYPE_DFID, FAN_EVENT_INFO_TYPE_DFID_NAME, FAN_EVENT_INFO_TYPE_FID,
    FAN_EVENT_INFO_TYPE_NEW_DFID_NAME, FAN_EVENT_INFO_TYPE_OLD_DFID_NAME, FAN_Q_OVERFLOW,
    FANOTIFY_METADATA_VERSION, FileHandle, MAX_HANDLE_SZ,
};
use crate::bytes::{i32_at, len, u16_at, u32_at, u64_at};
// The event and record headers are the mount events' too.
use crate::fanotify::decode::{INFO_HEADER_LEN, METADATA_LEN};

/// A file-id record without handle bytes: header, fsid, and the
/// `handle_bytes` and `handle_type` of the `struct file_handle`.
pub(super) const FID_HEADER_LEN: usize = 20;
/// The kernel's padding of info records (`FANOTIFY_EVENT_ALIGN`).
pub(super) const RECORD_ALIGN: usize = 4;

/// Why a buffer of file-id events does not decode. `at` is the byte
/// offset of the event that failed; the events before it were decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer than 24 bytes are left for the event's metadata.
    #[error("fanotify event at byte {at}: metadata truncated")]
    Truncated {
        /// The event's offset.
        at: usize,
    },
    /// `event_len` is below the metadata's size.
    #[error("fanotify event at byte {at}: event_len {event_len} below 24")]
    EventTooShort {
        /// The event's offset.
        at: usize,
        /// Its `event_len`.
        event_len: u32,
    },
    /// `event_len` runs past the end of the buffer.
    #[error("fanotify event at byte {at}: event_len {event_len} past the end of the buffer")]
    EventOverrun {
        /// The event's offset.
        at: usize,
        /// Its `event_len`.
        event_len: u32,
    },
    /// The metadata version is not the one this layout is (3).
    #[error("fanotify event at byte {at}: metadata version {vers}")]
    Version {
        /// The event's offset.
        at: usize,
        /// Its `vers`.
        vers: u8,
    },
    /// `metadata_len` is below 24 or past `event_len`.
    #[error("fanotify event at byte {at}: metadata_len {metadata_len} out of range")]
    MetadataLen {
        /// The event's offset.
        at: usize,
        /// Its `metadata_len`.
        metadata_len: u16,
    },
    /// An info record's header is cut by the end of its event.
    #[error("fanotify event at byte {at}: info record header truncated")]
    RecordTruncated {
        /// The event's offset.
        at: usize,
    },
    /// An info record's length is below its header, not a multiple of 4,
    /// or past the end of its event.
    #[error("fanotify event at byte {at}: info record of type {info_type} with bad length {len}")]
    RecordLen {
        /// The event's offset.
        at: usize,
        /// The record's type.
        info_type: u8,
        /// Its `len`.
        len: u16,
    },
    /// A file-id record too short for its fsid and handle header.
    #[error("fanotify event at byte {at}: file-id record of {len} bytes")]
    FidTooShort {
        /// The event's offset.
        at: usize,
        /// The record's `len`.
        len: u16,
    },
    /// A handle larger than `MAX_HANDLE_SZ` or than its record.
    #[error("fanotify event at byte {at}: handle of {handle_bytes} bytes does not fit")]
    HandleLen {
        /// The event's offset.
        at: usize,
        /// The handle's `handle_bytes`.
        handle_bytes: u32,
    },
    /// A named record without a NUL after the handle.
    #[error("fanotify event at byte {at}: name without its NUL")]
    NameUnterminated {
        /// The event's offset.
        at: usize,
    },
}

/// A file id as an event carries it: the filesystem's fsid (as `statfs`
/// gives it) and the handle, borrowed from the buffer. A handle of 0 bytes
/// means the kernel could not encode one (`FILEID_INVALID`): the object is
/// unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fid<'a> {
    /// `__kernel_fsid_t`, its two words.
    pub fsid: [u32; 2],
    /// The handle's `handle_type` (`FILEID_*`).
    pub handle_type: i32,
    /// The handle's bytes (at most `MAX_HANDLE_SZ`).
    pub handle: &'a [u8],
}

impl Fid<'_> {
    /// An owned copy of the handle, for `open_by_handle_at`; `None` only
    /// for a `Fid` built by hand with more than `MAX_HANDLE_SZ` bytes,
    /// which the decoder never yields.
    pub fn to_handle(&self) -> Option<FileHandle> {
        FileHandle::new(self.handle_type, self.handle)
    }
}

/// A directory's id and an entry's name in it. The name is raw bytes
/// without its NUL: any bytes but `/` and NUL, up to 255; a directory's
/// own events (`FAN_DELETE_SELF | FAN_ONDIR`) name it ".".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirName<'a> {
    /// The directory.
    pub dir: Fid<'a>,
    /// The entry's name.
    pub name: &'a [u8],
}

/// One event: its mask and pid and the records it carried, at most one of
/// each type (a repeated type keeps the first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FidEvent<'a> {
    /// The `FAN_*` bits; merged events have several.
    pub mask: u64,
    /// The process (tgid) that made the change.
    pub pid: i32,
    /// The event's fd: `FAN_NOFD` in file-id mode, where the kernel opens
    /// none. Anything else would be an fd of ours, for the caller to close.
    pub fd: i32,
    /// `DFID_NAME`: the parent directory and the entry's name.
    pub dir_name: Option<DirName<'a>>,
    /// `DFID`: a directory, without a name.
    pub dir: Option<Fid<'a>>,
    /// `FID`: the object itself (a directory-entry event's target).
    pub target: Option<Fid<'a>>,
    /// `OLD_DFID_NAME`: where a rename took the entry from.
    pub old: Option<DirName<'a>>,
    /// `NEW_DFID_NAME`: where a rename put the entry.
    pub new: Option<DirName<'a>>,
}

impl FidEvent<'_> {
    /// Whether this is the kernel's overflow: events were lost.
    pub fn is_overflow(&self) -> bool {
        self.mask & FAN_Q_OVERFLOW != 0
    }
}

/// Decodes a buffer of file-id events, calling `f` with each in order;
/// returns how many.
///
/// Pure and total on hostile bytes: a truncated event, `event_len` below
/// 24 or past the buffer, a version other than 3, an info record whose
/// length is below 4, not a multiple of 4 or past its event, a file-id
/// record too short for its handle header, a handle above `MAX_HANDLE_SZ`
/// or past its record, or a name without a NUL inside its record gives a
/// [`DecodeError`]; `f` has seen the events before it. Records of other
/// types are skipped after their length is checked.
pub fn decode_fid_events<'a>(
    buf: &'a [u8],
    mut f: impl FnMut(FidEvent<'a>),
) -> Result<usize, DecodeError> {
    let mut at = 0;
    let mut count = 0;
    while at < buf.len() {
        let rest = &buf[at..];
        let Some(meta) = rest.get(..METADATA_LEN) else {
            return Err(DecodeError::Truncated { at });
        };
        // Inside `meta` every read succeeds; the defaults keep this total.
        let event_len = u32_at(meta, 0).unwrap_or(0);
        let vers = meta[4];
        let metadata_len = u16_at(meta, 6).unwrap_or(0);
        let n = len(event_len);
        if n < METADATA_LEN {
            return Err(DecodeError::EventTooShort { at, event_len });
        }
        let Some(event) = rest.get(..n) else {
            return Err(DecodeError::EventOverrun { at, event_len });
        };
        if vers != FANOTIFY_METADATA_VERSION {
            return Err(DecodeError::Version { at, vers });
        }
        let m = usize::from(metadata_len);
        if m < METADATA_LEN || m > n {
            return Err(DecodeError::MetadataLen { at, metadata_len });
        }
        let mut ev = FidEvent {
            mask: u64_at(meta, 8).unwrap_or(0),
            fd: i32_at(meta, 16).unwrap_or(-1),
            pid: i32_at(meta, 20).unwrap_or(0),
            ..FidEvent::default()
        };
        records(at, &event[m..], &mut ev)?;
        f(ev);
        count += 1;
        at += n;
    }
    Ok(count)
}

/// Reads an event's info records into `ev`.
fn records<'a>(at: usize, mut info: &'a [u8], ev: &mut FidEvent<'a>) -> Result<(), DecodeError> {
    while !info.is_empty() {
        let (Some(&info_type), Some(rec_len)) = (info.first(), u16_at(info, 2)) else {
            return Err(DecodeError::RecordTruncated { at });
        };
        let n = usize::from(rec_len);
        let bad_len = DecodeError::RecordLen {
            at,
            info_type,
            len: rec_len,
        };
        if n < INFO_HEADER_LEN || n % RECORD_ALIGN != 0 {
            return Err(bad_len);
        }
        let Some(rec) = info.get(..n) else {
            return Err(bad_len);
        };
        info = &info[n..];
        let named = |ev_slot: &mut Option<DirName<'a>>| -> Result<(), DecodeError> {
            let (dir, tail) = fid(at, rec)?;
            let Some(nul) = tail.iter().position(|&b| b == 0) else {
                return Err(DecodeError::NameUnterminated { at });
            };
            ev_slot.get_or_insert(DirName {
                dir,
                name: &tail[..nul],
            });
            Ok(())
        };
        match info_type {
            FAN_EVENT_INFO_TYPE_FID => {
                let (target, _) = fid(at, rec)?;
                ev.target.get_or_insert(target);
            }
            FAN_EVENT_INFO_TYPE_DFID => {
                let (dir, _) = fid(at, rec)?;
                ev.dir.get_or_insert(dir);
            }
            FAN_EVENT_INFO_TYPE_DFID_NAME => named(&mut ev.dir_name)?,
            FAN_EVENT_INFO_TYPE_OLD_DFID_NAME => named(&mut ev.old)?,
            FAN_EVENT_INFO_TYPE_NEW_DFID_NAME => named(&mut ev.new)?,
            _ => {}
        }
    }
    Ok(())
}

/// The id a file-id record holds, and the bytes after its handle.
fn fid(at: usize, rec: &[u8]) -> Result<(Fid<'_>, &[u8]), DecodeError> {
    let Some(head) = rec.get(..FID_HEADER_LEN) else {
        return Err(DecodeError::FidTooShort {
            at,
            len: u16_at(rec, 2).unwrap_or(0),
        });
    };
    // Inside `head` every read succeeds; the defaults keep this total.
    let fsid = [u32_at(head, 4).unwrap_or(0), u32_at(head, 8).unwrap_or(0)];
    let handle_bytes = u32_at(head, 12).unwrap_or(u32::MAX);
    let handle_type = i32_at(head, 16).unwrap_or(0);
    let hb = len(handle_bytes);
    let body = &rec[FID_HEADER_LEN..];
    if hb > MAX_HANDLE_SZ || hb > body.len() {
        return Err(DecodeError::HandleLen { at, handle_bytes });
    }
    let (handle, tail) = body.split_at(hb);
    Ok((
        Fid {
            fsid,
            handle_type,
            handle,
        },
        tail,
    ))
}

#[cfg(test)]
mod tests;
