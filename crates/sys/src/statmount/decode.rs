//! Decoding a `struct statmount` answer from bytes.
//!
//! The layout is `include/uapi/linux/mount.h` as of 6.18: a fixed 512-byte
//! part (the `size` field counts it plus the strings) followed by `char
//! str[]`; each string field is a `u32` offset into `str` of a
//! NUL-terminated string. Everything is bounds-checked: a hostile buffer
//! gives [`Error::Malformed`], never a panic.

use super::{MntBasic, SbBasic, StatMount, mask};
use crate::bytes::{len, u32_at, u64_at};
use crate::{Error, Result};

/// `sizeof(struct statmount)`: where `str[]` starts. Stable since 6.8; new
/// fields take its spare words.
pub(super) const FIXED_SIZE: usize = 512;

/// Byte offsets of the fields in `struct statmount`.
pub(super) mod off {
    pub(crate) const SIZE: usize = 0;
    pub(crate) const MNT_OPTS: usize = 4;
    pub(crate) const MASK: usize = 8;
    pub(crate) const SB_DEV_MAJOR: usize = 16;
    pub(crate) const SB_DEV_MINOR: usize = 20;
    pub(crate) const SB_MAGIC: usize = 24;
    pub(crate) const SB_FLAGS: usize = 32;
    pub(crate) const FS_TYPE: usize = 36;
    pub(crate) const MNT_ID: usize = 40;
    pub(crate) const MNT_PARENT_ID: usize = 48;
    pub(crate) const MNT_ID_OLD: usize = 56;
    pub(crate) const MNT_PARENT_ID_OLD: usize = 60;
    pub(crate) const MNT_ATTR: usize = 64;
    pub(crate) const MNT_PROPAGATION: usize = 72;
    pub(crate) const MNT_PEER_GROUP: usize = 80;
    pub(crate) const MNT_MASTER: usize = 88;
    pub(crate) const PROPAGATE_FROM: usize = 96;
    pub(crate) const MNT_ROOT: usize = 104;
    pub(crate) const MNT_POINT: usize = 108;
    pub(crate) const MNT_NS_ID: usize = 112;
    pub(crate) const FS_SUBTYPE: usize = 120;
    pub(crate) const SB_SOURCE: usize = 124;
}

/// Decodes a statmount buffer (the bytes the kernel filled; any bytes past
/// the `size` field are ignored).
///
/// Pure and total: hostile bytes give [`Error::Malformed`], never a panic or
/// an out-of-bounds read. The buffer must hold the 512-byte fixed part,
/// `size` must lie between 512 and the buffer's length, and every string
/// whose mask bit is set must start inside `str[]` and end with a NUL
/// before `size`. Fields whose bit is not set are not looked at.
pub fn decode(buf: &[u8]) -> Result<StatMount> {
    let Some(fixed) = buf.get(..FIXED_SIZE) else {
        return Err(Error::Malformed {
            what: "statmount buffer shorter than struct statmount",
        });
    };
    // Inside the fixed part every read succeeds; 0 keeps this total anyway.
    let u32f = |o| u32_at(fixed, o).unwrap_or(0);
    let u64f = |o| u64_at(fixed, o).unwrap_or(0);
    let size = len(u32f(off::SIZE));
    if size < FIXED_SIZE {
        return Err(Error::Malformed {
            what: "statmount size smaller than struct statmount",
        });
    }
    let Some(buf) = buf.get(..size) else {
        return Err(Error::Malformed {
            what: "statmount size beyond the buffer",
        });
    };
    let strs = &buf[FIXED_SIZE..];
    let m = u64f(off::MASK);
    let has = |bit: u64| m & bit != 0;
    let string = |bit: u64, o: usize| -> Result<Option<Vec<u8>>> {
        if !has(bit) {
            return Ok(None);
        }
        str_at(strs, len(u32f(o))).map(Some)
    };
    Ok(StatMount {
        mask: m,
        sb: has(mask::SB_BASIC).then(|| SbBasic {
            dev_major: u32f(off::SB_DEV_MAJOR),
            dev_minor: u32f(off::SB_DEV_MINOR),
            magic: u64f(off::SB_MAGIC),
            flags: u32f(off::SB_FLAGS),
        }),
        mnt: has(mask::MNT_BASIC).then(|| MntBasic {
            id: u64f(off::MNT_ID),
            parent_id: u64f(off::MNT_PARENT_ID),
            id_old: u32f(off::MNT_ID_OLD),
            parent_id_old: u32f(off::MNT_PARENT_ID_OLD),
            attr: u64f(off::MNT_ATTR),
            propagation: u64f(off::MNT_PROPAGATION),
            peer_group: u64f(off::MNT_PEER_GROUP),
            master: u64f(off::MNT_MASTER),
        }),
        propagate_from: has(mask::PROPAGATE_FROM).then(|| u64f(off::PROPAGATE_FROM)),
        mnt_root: string(mask::MNT_ROOT, off::MNT_ROOT)?,
        mnt_point: string(mask::MNT_POINT, off::MNT_POINT)?,
        fs_type: string(mask::FS_TYPE, off::FS_TYPE)?,
        mnt_ns_id: has(mask::MNT_NS_ID).then(|| u64f(off::MNT_NS_ID)),
        mnt_opts: string(mask::MNT_OPTS, off::MNT_OPTS)?,
        fs_subtype: string(mask::FS_SUBTYPE, off::FS_SUBTYPE)?,
        sb_source: string(mask::SB_SOURCE, off::SB_SOURCE)?,
    })
}

/// The NUL-terminated string at `start` in `str[]`, without its NUL.
fn str_at(strs: &[u8], start: usize) -> Result<Vec<u8>> {
    let tail = strs
        .get(start..)
        .filter(|t| !t.is_empty())
        .ok_or(Error::Malformed {
            what: "statmount string offset beyond the buffer",
        })?;
    let nul = tail.iter().position(|&b| b == 0).ok_or(Error::Malformed {
        what: "statmount string without NUL",
    })?;
    Ok(tail[..nul].to_vec())
}

#[cfg(test)]
mod tests;
