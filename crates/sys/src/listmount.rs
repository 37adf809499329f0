//! `listmount(2)` (Linux 6.8): the unique ids of the mounts in the caller's
//! mount namespace.
//!
//! One call fills an array of ids after a given id; we paginate until the
//! kernel returns 0, passing the last id seen. The ids are the 64-bit unique
//! ids that are never reused (unlike the old 32-bit ids of mountinfo), so
//! they also name mounts in `statmount(2)` and in fanotify events.

use rustix::io::Errno;

use crate::error::last_errno;
use crate::mnt_id_req::{MntIdReq, SYS_LISTMOUNT};
use crate::{Error, Result};

/// `LSMT_ROOT`: as the parent id, "the whole namespace" rather than the
/// children of one mount.
pub const LSMT_ROOT: u64 = u64::MAX;

/// How many ids one call may fill at least; the caller's spare capacity is
/// used when larger.
const MIN_CHUNK: usize = 512;
/// How many ids one call may fill at most: the kernel allocates a buffer of
/// this size, and a huge reused vector should not make it allocate megabytes.
const MAX_CHUNK: usize = 16 * 1024;

/// All mount ids (unique 64-bit) in the caller's mount namespace, in
/// increasing order, paginated internally.
///
/// Works without privilege for the caller's own namespace. Fails with
/// `ENOSYS` before Linux 6.8.
pub fn listmount_all() -> Result<Vec<u64>> {
    let mut out = Vec::new();
    listmount_into(&mut out)?;
    Ok(out)
}

/// Same as [`listmount_all`] but reusing the caller's vector (cleared
/// first) to avoid reallocation. On error the vector is left empty.
pub fn listmount_into(out: &mut Vec<u64>) -> Result<()> {
    out.clear();
    let res = fill(out);
    if res.is_err() {
        out.clear();
    }
    res
}

fn fill(out: &mut Vec<u64>) -> Result<()> {
    let mut req = MntIdReq::new(LSMT_ROOT, 0);
    loop {
        let start = out.len();
        let chunk = (out.capacity() - start).clamp(MIN_CHUNK, MAX_CHUNK);
        out.resize(start + chunk, 0);
        let n = sys_listmount(&req, &mut out[start..]).map_err(Error::syscall("listmount"))?;
        if n > chunk {
            return Err(Error::Malformed {
                what: "listmount returned more ids than asked",
            });
        }
        out.truncate(start + n);
        if n == 0 {
            return Ok(());
        }
        let last = out[start + n - 1];
        // Pages continue after the last id, so ids must grow; a kernel that
        // repeated itself would otherwise make this loop forever.
        if last <= req.param {
            return Err(Error::Malformed {
                what: "listmount ids not increasing",
            });
        }
        req.param = last;
    }
}

/// `listmount(req, ids, nr, 0)`: fills `ids` with up to `ids.len()` mount
/// ids after `req.param` and returns how many.
fn sys_listmount(req: &MntIdReq, ids: &mut [u64]) -> Result<usize, Errno> {
    // SAFETY: `req` is a live, initialised `mnt_id_req` whose `size` field
    // (VER0 = 24) is within the struct; `ids` is a writable array of exactly
    // `ids.len()` u64s, the count we pass, so the kernel writes inside it.
    // The kernel keeps neither pointer after returning.
    let r = unsafe {
        libc::syscall(
            SYS_LISTMOUNT,
            std::ptr::from_ref(req),
            ids.as_mut_ptr(),
            ids.len(),
            0 as libc::c_uint,
        )
    };
    usize::try_from(r).map_err(|_| last_errno())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_increasing_ids_including_our_root() {
        let ids = match listmount_all() {
            Ok(ids) => ids,
            Err(e) if e.errno() == Some(Errno::NOSYS) => {
                eprintln!("skipped: listmount needs Linux 6.8");
                return;
            }
            Err(e) => panic!("listmount: {e}"),
        };
        assert!(!ids.is_empty());
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        let root = crate::statx::mount_id_unique(std::path::Path::new("/")).unwrap();
        assert!(ids.contains(&root), "{root} not in {ids:?}");
    }

    #[test]
    fn into_clears_and_reuses() {
        let Ok(fresh) = listmount_all() else {
            eprintln!("skipped: listmount needs Linux 6.8");
            return;
        };
        let mut v = vec![0u64; 3000];
        listmount_into(&mut v).unwrap();
        // The stale contents are gone and the 3000-id capacity is reused.
        assert_eq!(v, fresh);
        assert!(v.capacity() >= 3000);
    }
}
