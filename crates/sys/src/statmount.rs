//! `statmount(2)` (Linux 6.8): one mount's attributes by its unique id.
//!
//! The kernel fills a 512-byte `struct statmount` followed by the strings it
//! was asked for; a field is valid only when its bit is in the returned
//! `mask`. [`Statmounter`] owns the buffer and grows it on `EOVERFLOW`;
//! [`decode`] turns the bytes into a [`StatMount`] with safe code.

mod decode;

use rustix::io::Errno;

use crate::error::last_errno;
use crate::mnt_id_req::{MntIdReq, SYS_STATMOUNT};
use crate::{Error, Result};

pub use decode::decode;

/// `STATMOUNT_*` request and answer bits (`include/uapi/linux/mount.h`).
pub mod mask {
    /// `STATMOUNT_SB_BASIC`: superblock device, magic and flags.
    pub const SB_BASIC: u64 = 0x0000_0001;
    /// `STATMOUNT_MNT_BASIC`: ids, attributes, propagation.
    pub const MNT_BASIC: u64 = 0x0000_0002;
    /// `STATMOUNT_PROPAGATE_FROM`: the dominating peer group of a slave.
    pub const PROPAGATE_FROM: u64 = 0x0000_0004;
    /// `STATMOUNT_MNT_ROOT`: the mounted directory inside its filesystem.
    pub const MNT_ROOT: u64 = 0x0000_0008;
    /// `STATMOUNT_MNT_POINT`: where it is mounted, from the caller's root.
    pub const MNT_POINT: u64 = 0x0000_0010;
    /// `STATMOUNT_FS_TYPE`: the filesystem type name.
    pub const FS_TYPE: u64 = 0x0000_0020;
    /// `STATMOUNT_MNT_NS_ID`: the id of the mount's namespace (6.10).
    pub const MNT_NS_ID: u64 = 0x0000_0040;
    /// `STATMOUNT_MNT_OPTS`: the filesystem's own options, comma-separated
    /// (6.10).
    pub const MNT_OPTS: u64 = 0x0000_0080;
    /// `STATMOUNT_FS_SUBTYPE`: e.g. the FUSE subtype (6.13).
    pub const FS_SUBTYPE: u64 = 0x0000_0100;
    /// `STATMOUNT_SB_SOURCE`: the mount source, e.g. a device path (6.13).
    pub const SB_SOURCE: u64 = 0x0000_0200;
    /// `STATMOUNT_OPT_ARRAY`: the options as an array (6.13; not decoded).
    pub const OPT_ARRAY: u64 = 0x0000_0400;
    /// `STATMOUNT_OPT_SEC_ARRAY`: the security options (6.13; not decoded).
    pub const OPT_SEC_ARRAY: u64 = 0x0000_0800;
    /// `STATMOUNT_SUPPORTED_MASK`: the bits this kernel knows (6.15; not
    /// decoded).
    pub const SUPPORTED_MASK: u64 = 0x0000_1000;
    /// `STATMOUNT_MNT_UIDMAP`: an idmapped mount's uid map (6.15; not
    /// decoded).
    pub const MNT_UIDMAP: u64 = 0x0000_2000;
    /// `STATMOUNT_MNT_GIDMAP`: an idmapped mount's gid map (6.15; not
    /// decoded).
    pub const MNT_GIDMAP: u64 = 0x0000_4000;

    /// Every bit that has a field in [`StatMount`](super::StatMount).
    pub const DECODED: u64 = SB_BASIC
        | MNT_BASIC
        | PROPAGATE_FROM
        | MNT_ROOT
        | MNT_POINT
        | FS_TYPE
        | MNT_NS_ID
        | MNT_OPTS
        | FS_SUBTYPE
        | SB_SOURCE;
}

/// Mount attribute bits in [`MntBasic::attr`] (`MOUNT_ATTR_*`, the
/// per-mount flags of `mount_setattr(2)`).
pub mod attr {
    /// `MOUNT_ATTR_RDONLY`.
    pub const RDONLY: u64 = 0x0000_0001;
    /// `MOUNT_ATTR_NOSUID`.
    pub const NOSUID: u64 = 0x0000_0002;
    /// `MOUNT_ATTR_NODEV`.
    pub const NODEV: u64 = 0x0000_0004;
    /// `MOUNT_ATTR_NOEXEC`.
    pub const NOEXEC: u64 = 0x0000_0008;
    /// `MOUNT_ATTR__ATIME`: the atime mode is this 3-bit field, not flags.
    pub const ATIME_MASK: u64 = 0x0000_0070;
    /// `MOUNT_ATTR_RELATIME`: the atime mode's zero value.
    pub const RELATIME: u64 = 0x0000_0000;
    /// `MOUNT_ATTR_NOATIME`.
    pub const NOATIME: u64 = 0x0000_0010;
    /// `MOUNT_ATTR_STRICTATIME`.
    pub const STRICTATIME: u64 = 0x0000_0020;
    /// `MOUNT_ATTR_NODIRATIME`.
    pub const NODIRATIME: u64 = 0x0000_0080;
    /// `MOUNT_ATTR_IDMAP`: an idmapped mount.
    pub const IDMAP: u64 = 0x0010_0000;
    /// `MOUNT_ATTR_NOSYMFOLLOW`.
    pub const NOSYMFOLLOW: u64 = 0x0020_0000;
}

/// Superblock flag bits in [`SbBasic::flags`] (`SB_*` of
/// `include/linux/fs.h`, equal to the `MS_*` of uapi `mount.h`). statmount
/// reports only these; the others (nosuid, noexec...) are per-mount
/// attributes, in [`attr`].
pub mod sb {
    /// `SB_RDONLY`: the filesystem itself is read-only.
    pub const RDONLY: u32 = 1;
    /// `SB_SYNCHRONOUS`: writes are synced at once.
    pub const SYNCHRONOUS: u32 = 1 << 4;
    /// `SB_MANDLOCK`: mandatory locks (gone from Linux; kept for decoding).
    pub const MANDLOCK: u32 = 1 << 6;
    /// `SB_DIRSYNC`: directory changes are synced at once.
    pub const DIRSYNC: u32 = 1 << 7;
    /// `SB_LAZYTIME`: timestamps are updated lazily.
    pub const LAZYTIME: u32 = 1 << 25;
}

/// Propagation bits in [`MntBasic::propagation`] (`MS_*` of uapi
/// `mount.h`). A mount that is neither shared, slave nor unbindable is
/// reported `MS_PRIVATE`.
pub mod propagation {
    /// `MS_UNBINDABLE`.
    pub const MS_UNBINDABLE: u64 = 1 << 17;
    /// `MS_PRIVATE`.
    pub const MS_PRIVATE: u64 = 1 << 18;
    /// `MS_SLAVE`: receives propagation from [`MntBasic::master`](super::MntBasic::master).
    pub const MS_SLAVE: u64 = 1 << 19;
    /// `MS_SHARED`: member of peer group [`MntBasic::peer_group`](super::MntBasic::peer_group).
    pub const MS_SHARED: u64 = 1 << 20;
}

/// One statmount result, decoded. Each `Option` is `Some` only when the
/// kernel set its mask bit. Strings are raw bytes without the NUL: paths
/// need not be UTF-8.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatMount {
    /// The mask as returned: what the kernel filled, which may be less than
    /// asked (an older kernel, or a string that is unset for this mount).
    pub mask: u64,
    /// [`mask::SB_BASIC`].
    pub sb: Option<SbBasic>,
    /// [`mask::MNT_BASIC`].
    pub mnt: Option<MntBasic>,
    /// [`mask::PROPAGATE_FROM`]: the dominating peer group (0 if none).
    pub propagate_from: Option<u64>,
    /// [`mask::MNT_ROOT`]: the mounted directory inside its filesystem.
    pub mnt_root: Option<Vec<u8>>,
    /// [`mask::MNT_POINT`]: the mount point, from the caller's root.
    pub mnt_point: Option<Vec<u8>>,
    /// [`mask::FS_TYPE`]: the filesystem type, e.g. `tmpfs`.
    pub fs_type: Option<Vec<u8>>,
    /// [`mask::MNT_NS_ID`]: the id of the mount's namespace.
    pub mnt_ns_id: Option<u64>,
    /// [`mask::MNT_OPTS`]: the superblock's own options, comma-separated.
    pub mnt_opts: Option<Vec<u8>>,
    /// [`mask::FS_SUBTYPE`]: the subtype, e.g. of a FUSE filesystem.
    pub fs_subtype: Option<Vec<u8>>,
    /// [`mask::SB_SOURCE`]: the source, e.g. a device path.
    pub sb_source: Option<Vec<u8>>,
}

/// The superblock part of a statmount answer ([`mask::SB_BASIC`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SbBasic {
    /// The device's major number.
    pub dev_major: u32,
    /// The device's minor number.
    pub dev_minor: u32,
    /// The filesystem magic (`statfs` `f_type`).
    pub magic: u64,
    /// [`sb`] bits.
    pub flags: u32,
}

/// The mount part of a statmount answer ([`mask::MNT_BASIC`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MntBasic {
    /// The unique 64-bit mount id.
    pub id: u64,
    /// The parent's unique id (the mount's own for a namespace root).
    pub parent_id: u64,
    /// The old, reusable 32-bit id of mountinfo.
    pub id_old: u32,
    /// The parent's old id.
    pub parent_id_old: u32,
    /// [`attr`] bits.
    pub attr: u64,
    /// [`propagation`] bits.
    pub propagation: u64,
    /// The peer group id when shared, else 0.
    pub peer_group: u64,
    /// The master's peer group id when a slave, else 0.
    pub master: u64,
}

/// The first buffer size: the 512-byte struct plus room for typical paths
/// and options.
const INITIAL_BUF: usize = 4 * 1024;
/// The largest buffer we grow to. The kernel's strings are paths and
/// option lists; an answer this large is a bug or an attack, not a mount.
const MAX_BUF: usize = 16 * 1024 * 1024;

/// A reusable statmount caller: owns a buffer that starts at 4 KiB and
/// doubles on `EOVERFLOW`, up to 16 MiB.
pub struct Statmounter {
    buf: Vec<u8>,
}

impl std::fmt::Debug for Statmounter {
    // Not derived: the buffer's bytes are noise; its size is what matters.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Statmounter")
            .field("buf_len", &self.buf.len())
            .finish()
    }
}

impl Default for Statmounter {
    fn default() -> Self {
        Self::new()
    }
}

impl Statmounter {
    /// A caller with a 4 KiB buffer.
    pub fn new() -> Self {
        Statmounter {
            buf: vec![0; INITIAL_BUF],
        }
    }

    /// `statmount(2)` of `mnt_id` in the caller's namespace, asking for
    /// `mask` ([`mask`] bits).
    ///
    /// Errors keep the errno: `ENOENT` when the mount is gone, `ENOSYS`
    /// before Linux 6.8, `EINVAL` for bits an older kernel does not know,
    /// `EOVERFLOW` when the answer does not fit in 16 MiB.
    pub fn stat(&mut self, mnt_id: u64, mask: u64) -> Result<StatMount> {
        let req = MntIdReq::new(mnt_id, mask);
        loop {
            match sys_statmount(&req, &mut self.buf) {
                Ok(()) => return decode(&self.buf),
                Err(Errno::OVERFLOW) if self.buf.len() < MAX_BUF => {
                    let grown = self.buf.len() * 2;
                    self.buf.resize(grown, 0);
                }
                Err(errno) => {
                    return Err(Error::Syscall {
                        call: "statmount",
                        errno,
                    });
                }
            }
        }
    }
}

/// `statmount(req, buf, bufsize, 0)`: fills `buf` with `struct statmount`
/// and its strings.
fn sys_statmount(req: &MntIdReq, buf: &mut [u8]) -> Result<(), Errno> {
    // SAFETY: `req` is a live, initialised `mnt_id_req` whose `size` field
    // (VER0 = 24) is within the struct; `buf` is writable for exactly
    // `buf.len()` bytes, the size we pass, and the kernel writes only inside
    // it (copy_to_user needs no alignment). No pointer outlives the call.
    let r = unsafe {
        libc::syscall(
            SYS_STATMOUNT,
            std::ptr::from_ref(req),
            buf.as_mut_ptr(),
            buf.len(),
            0 as libc::c_uint,
        )
    };
    if r < 0 { Err(last_errno()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: u64 = mask::DECODED;

    fn root_id() -> Option<u64> {
        match crate::statx::mount_id_unique(std::path::Path::new("/")) {
            Ok(id) => Some(id),
            Err(e) => {
                eprintln!("skipped: no unique mount id ({e})");
                None
            }
        }
    }

    #[test]
    fn stats_the_root_mount() {
        let Some(id) = root_id() else { return };
        let mut s = Statmounter::new();
        let sm = match s.stat(id, ALL) {
            Err(e) if e.errno() == Some(Errno::NOSYS) => return,
            r => r.unwrap(),
        };
        assert_eq!(sm.mnt_point.as_deref(), Some(&b"/"[..]));
        assert_eq!(sm.mnt.unwrap().id, id);
        assert!(sm.sb.is_some() && sm.fs_type.is_some());
        assert_eq!(sm.mask & !ALL, 0, "unasked bits {:#x}", sm.mask);
    }

    /// Our constants against the ones rustix takes from the kernel headers
    /// (linux-raw-sys), where those exist.
    #[test]
    fn constants_agree_with_kernel_headers() {
        use rustix::mount::{MountAttrFlags as A, MountFlags as F, MountPropagationFlags as P};
        let a = |f: A| u64::from(f.bits());
        assert_eq!(attr::RDONLY, a(A::MOUNT_ATTR_RDONLY));
        assert_eq!(attr::NOSUID, a(A::MOUNT_ATTR_NOSUID));
        assert_eq!(attr::NODEV, a(A::MOUNT_ATTR_NODEV));
        assert_eq!(attr::NOEXEC, a(A::MOUNT_ATTR_NOEXEC));
        assert_eq!(attr::ATIME_MASK, a(A::MOUNT_ATTR__ATIME));
        assert_eq!(attr::RELATIME, a(A::MOUNT_ATTR_RELATIME));
        assert_eq!(attr::NOATIME, a(A::MOUNT_ATTR_NOATIME));
        assert_eq!(attr::STRICTATIME, a(A::MOUNT_ATTR_STRICTATIME));
        assert_eq!(attr::NODIRATIME, a(A::MOUNT_ATTR_NODIRATIME));
        assert_eq!(attr::IDMAP, a(A::MOUNT_ATTR_IDMAP));
        assert_eq!(attr::NOSYMFOLLOW, a(A::MOUNT_ATTR_NOSYMFOLLOW));
        assert_eq!(sb::RDONLY, F::RDONLY.bits());
        assert_eq!(sb::SYNCHRONOUS, F::SYNCHRONOUS.bits());
        assert_eq!(sb::MANDLOCK, F::PERMIT_MANDATORY_FILE_LOCKING.bits());
        assert_eq!(sb::DIRSYNC, F::DIRSYNC.bits());
        assert_eq!(sb::LAZYTIME, F::LAZYTIME.bits());
        let p = |f: P| u64::from(f.bits());
        assert_eq!(propagation::MS_UNBINDABLE, p(P::UNBINDABLE));
        assert_eq!(propagation::MS_PRIVATE, p(P::PRIVATE));
        assert_eq!(propagation::MS_SLAVE, p(P::DOWNSTREAM));
        assert_eq!(propagation::MS_SHARED, p(P::SHARED));
    }

    #[test]
    fn a_missing_mount_is_enoent() {
        let mut s = Statmounter::new();
        let e = s.stat(u64::MAX - 1, mask::MNT_BASIC).unwrap_err();
        if e.errno() == Some(Errno::NOSYS) {
            return;
        }
        assert_eq!(e.errno(), Some(Errno::NOENT), "{e}");
    }

    #[test]
    fn grows_on_eoverflow() {
        let Some(id) = root_id() else { return };
        let mut s = Statmounter { buf: vec![0; 513] };
        let sm = s.stat(id, ALL).unwrap();
        assert!(s.buf.len() > 513);
        assert_eq!(sm, Statmounter::new().stat(id, ALL).unwrap());
    }
}
