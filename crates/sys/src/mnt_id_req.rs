//! `struct mnt_id_req`, the request both `listmount(2)` and `statmount(2)`
//! take, and their syscall numbers.
//!
//! Not in Debian 12's 6.1 headers nor (for every architecture) in `libc`,
//! so the layout comes from `include/uapi/linux/mount.h` (6.8-6.18).

/// `__NR_statmount` (Linux 6.8). Same number on x86_64 and on every
/// architecture using the generic syscall table; alpha (+110) is not
/// supported.
pub(crate) const SYS_STATMOUNT: libc::c_long = 457;
/// `__NR_listmount` (Linux 6.8), numbered like [`SYS_STATMOUNT`].
pub(crate) const SYS_LISTMOUNT: libc::c_long = 458;

/// `MNT_ID_REQ_SIZE_VER0`: the 6.8 request, without `mnt_ns_id`.
const MNT_ID_REQ_SIZE_VER0: u32 = 24;

/// `struct mnt_id_req` (VER1 layout, 32 bytes).
///
/// We send `size = VER0` because we always ask about the caller's own
/// namespace: that works on every kernel with the calls (6.8+), while VER1
/// needs 6.11. The kernel then reads only the first 24 bytes.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct MntIdReq {
    size: u32,
    /// Later kernels put a namespace or mount fd here; must be 0.
    spare: u32,
    /// statmount: the mount to query; listmount: the parent to list under.
    pub(crate) mnt_id: u64,
    /// statmount: the `STATMOUNT_*` mask; listmount: the last id seen.
    pub(crate) param: u64,
    /// VER1: the target namespace's id; 0 = the caller's. Not sent (VER0).
    mnt_ns_id: u64,
}

impl MntIdReq {
    /// A request for `mnt_id` with `param` in the caller's namespace.
    pub(crate) fn new(mnt_id: u64, param: u64) -> Self {
        MntIdReq {
            size: MNT_ID_REQ_SIZE_VER0,
            spare: 0,
            mnt_id,
            param,
            mnt_ns_id: 0,
        }
    }
}

// The kernel reads the struct by its `size` field; the Rust layout must be
// the C one for that prefix to mean the same thing.
const _: () = assert!(std::mem::size_of::<MntIdReq>() == 32);
const _: () = assert!(std::mem::offset_of!(MntIdReq, mnt_id) == 8);
const _: () = assert!(std::mem::offset_of!(MntIdReq, param) == 16);
const _: () = assert!(std::mem::offset_of!(MntIdReq, mnt_ns_id) == 24);
