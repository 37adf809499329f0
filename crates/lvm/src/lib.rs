//! `weir-lvm`: the LVM2 on-disk format, read by pure code.
//!
//! Seeds 000 and 001 are why this crate exists: LVM's `pvscan` rebuilt its
//! whole device list on every event, and `vgs` read the metadata of every
//! PV. Here a PV costs one small read for its label and mda headers, and a
//! metadata text is read and parsed once per distinct (checksum, size),
//! however many PVs carry it.
//!
//! - [`read_at`]: the only I/O this crate does, through [`ReadAt`].
//! - [`crc`]: LVM's CRC-32 (reflected, initial value 0xf597a6cf).
//! - [`label`]: the label in sectors 0–3; [`pv_header`]: data areas,
//!   metadata areas and the extension.
//! - [`mda`]: the mda_header, its raw_locn slots and the circular text
//!   buffer.
//! - [`text`]: the libdm config grammar; [`meta`]: a VG's metadata
//!   ([`VgMeta`], in [`model`]) from a parsed text.
//! - [`probe`]: one device: label, headers, the authoritative copy.
//! - [`assembly`]: which VGs are complete, from the PVs seen so far.
//!
//! Everything read from a disk is hostile (a USB stick is untrusted): every
//! length and offset is checked against the device and against fixed
//! limits before anything is allocated, and every parser has a fuzz target.
#![forbid(unsafe_code)]

pub mod assembly;
pub mod crc;
pub mod disk_error;
mod error;
pub mod label;
pub mod mda;
pub mod meta;
pub mod model;
pub mod probe;
pub mod pv_header;
pub mod read_at;
pub mod text;

pub use error::{Error, Result};
pub use model::{AreaOn, LinkRole, LvMeta, LvSegment, PvMeta, SegArea, SegLink, Uuid, VgMeta};
pub use read_at::ReadAt;
