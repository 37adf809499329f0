//! `weir-sys`: the only crate of weir with `unsafe` code.
//!
//! It wraps the Linux calls that `rustix` does not (yet) offer, or offers
//! without the newest flags: `listmount(2)`, `statmount(2)`, fanotify mount
//! notifications (`FAN_REPORT_MNT`, Linux 6.15+), fanotify file-id groups
//! marked on whole filesystems with `name_to_handle_at(2)` and
//! `open_by_handle_at(2)` for their ids ([`fanotify::fid`]), `statx(2)` with
//! `STATX_MNT_ID_UNIQUE`, and `recvmsg(2)` on the uevent netlink socket
//! ([`uevent`]), whose kernel credentials (pid 0) rustix cannot hold. It is
//! modelled on rustix: kernel names are kept, and each `unsafe` block is a
//! small fence around one system call with a `// SAFETY:` comment.
//!
//! inotify ([`inotify`]), for weir-devices' watch on block device nodes
//! (`IN_CLOSE_WRITE`), is here too: rustix makes its calls, but its events
//! are decoded by this crate's own checked code. So are two safe pieces a
//! change journal needs beside its fanotify group, made with rustix: a
//! detached mount of a filesystem's top level ([`fsmount`]), to mark a
//! btrfs filesystem mounted only through subvolumes, and `statfs(2)`'s
//! fsid as fanotify's records carry it ([`statfs`]).
//!
//! It also holds the CPU instructions weir calls directly: `crc32`, for the
//! CRC of short log frames ([`crc32c`]), and two cache-line hints for the
//! log's contended append counter ([`cache`]); and `malloc_trim(3)`, which
//! gives a burst of freed temporaries back to the kernel ([`heap`]).
//!
//! The kernel's answers are decoded by safe code that reads byte slices
//! (never pointer casts), so the decoders ([`statmount::decode`],
//! [`fanotify::decode_events`], [`fanotify::fid::decode_fid_events`],
//! [`inotify::decode_events`],
//! [`uevent::decode_creds`]) are total on hostile bytes and fuzzed or
//! property-tested.
//!
//! The constants are defined here rather than taken from `libc`: distro
//! headers (Debian 12 ships 6.1) and the `libc` crate lag behind the kernel.
#![allow(unsafe_code)]

pub mod activation;
mod bytes;
pub mod cache;
pub mod crc32c;
mod error;
pub mod fanotify;
pub mod fsmount;
pub mod heap;
pub mod inotify;
pub mod listmount;
mod mnt_id_req;
pub mod peer;
pub mod statfs;
pub mod statmount;
pub mod statx;
pub mod uevent;

pub use error::{Error, Result};
