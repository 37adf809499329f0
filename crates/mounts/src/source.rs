//! Reading the table from the kernel: listmount + statmount, or mountinfo.
//!
//! statmount answers in flag words and keeps the filesystem's own options
//! apart from the generic ones; [`from_statmount`] maps that onto the same
//! [`Mount`] the mountinfo parser fills, so tables from both compare equal
//! but for the ids.

use weir_sys::statmount::{StatMount, Statmounter, attr, mask, propagation, sb};

use crate::backend::Backend;
use crate::model::{Mount, MountFlags, Propagation, SuperFlags};
use crate::mountinfo::MountinfoFile;
use crate::{Error, Result};

/// The statmount fields a [`Mount`] needs.
pub const MASK: u64 = mask::SB_BASIC
    | mask::MNT_BASIC
    | mask::PROPAGATE_FROM
    | mask::MNT_ROOT
    | mask::MNT_POINT
    | mask::FS_TYPE
    | mask::MNT_OPTS
    | mask::FS_SUBTYPE
    | mask::SB_SOURCE;

/// The mask bits without which a statmount answer is not a mount weir can
/// describe. The string fields other than these may be absent: the kernel
/// leaves out a string that is unset (no options for proc, no source for
/// some pseudo filesystems).
const REQUIRED: u64 = mask::SB_BASIC | mask::MNT_BASIC | mask::MNT_POINT | mask::FS_TYPE;

/// Builds a [`Mount`] from a statmount answer, or `None` when a required
/// field is missing from the returned mask.
pub fn from_statmount(sm: &StatMount) -> Option<Mount> {
    if sm.mask & REQUIRED != REQUIRED {
        return None;
    }
    let sbb = sm.sb.as_ref()?;
    let mnt = sm.mnt.as_ref()?;
    Some(Mount {
        id: mnt.id,
        parent_id: mnt.parent_id,
        old_id: mnt.id_old,
        old_parent_id: mnt.parent_id_old,
        major: sbb.dev_major,
        minor: sbb.dev_minor,
        root: boxed(sm.mnt_root.as_deref().unwrap_or(b"/")),
        mount_point: boxed(sm.mnt_point.as_deref()?),
        fstype: boxed(sm.fs_type.as_deref()?),
        subtype: sm
            .fs_subtype
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(boxed),
        // mountinfo prints "none" for a mount without a source.
        source: boxed(sm.sb_source.as_deref().unwrap_or(b"none")),
        flags: mount_flags(mnt.attr),
        super_flags: super_flags(sbb.flags),
        fs_options: boxed(sm.mnt_opts.as_deref().unwrap_or(b"")),
        propagation: propagation_of(mnt.propagation, mnt.peer_group, mnt.master, sm),
    })
}

fn boxed(b: &[u8]) -> Box<[u8]> {
    b.into()
}

fn mount_flags(a: u64) -> MountFlags {
    let mut f = MountFlags::default();
    let map = [
        (attr::RDONLY, MountFlags::RDONLY),
        (attr::NOSUID, MountFlags::NOSUID),
        (attr::NODEV, MountFlags::NODEV),
        (attr::NOEXEC, MountFlags::NOEXEC),
        (attr::NODIRATIME, MountFlags::NODIRATIME),
        (attr::NOSYMFOLLOW, MountFlags::NOSYMFOLLOW),
        (attr::IDMAP, MountFlags::IDMAPPED),
    ];
    for (bit, flag) in map {
        if a & bit != 0 {
            f.insert(flag);
        }
    }
    // The atime mode is a 3-bit field, not flags; relatime is its zero.
    match a & attr::ATIME_MASK {
        attr::RELATIME => f.insert(MountFlags::RELATIME),
        attr::NOATIME => f.insert(MountFlags::NOATIME),
        _ => {}
    }
    f
}

fn super_flags(s: u32) -> SuperFlags {
    let mut f = SuperFlags::default();
    let map = [
        (sb::RDONLY, SuperFlags::RDONLY),
        (sb::SYNCHRONOUS, SuperFlags::SYNCHRONOUS),
        (sb::MANDLOCK, SuperFlags::MANDLOCK),
        (sb::DIRSYNC, SuperFlags::DIRSYNC),
        (sb::LAZYTIME, SuperFlags::LAZYTIME),
    ];
    for (bit, flag) in map {
        if s & bit != 0 {
            f.insert(flag);
        }
    }
    f
}

/// The propagation as mountinfo shows it: `propagate_from` only for a slave
/// whose dominating group differs from its master.
fn propagation_of(bits: u64, peer: u64, master: u64, sm: &StatMount) -> Propagation {
    let slave = bits & propagation::MS_SLAVE != 0;
    let from = sm
        .propagate_from
        .filter(|&p| slave && p != 0 && p != master);
    Propagation {
        shared: (bits & propagation::MS_SHARED != 0).then_some(peer),
        master: slave.then_some(master),
        propagate_from: from,
        unbindable: bits & propagation::MS_UNBINDABLE != 0,
    }
}

/// Reads every mount of the caller's namespace with listmount + statmount.
///
/// The kernel gives no atomic view: a mount that goes away between the two
/// calls is skipped. A tracker repairs such races from its event stream.
pub fn read_statmount(sm: &mut Statmounter, ids: &mut Vec<u64>) -> Result<Vec<Mount>> {
    weir_sys::listmount::listmount_into(ids)?;
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids.iter() {
        match stat_one(sm, id)? {
            Some(m) => out.push(m),
            None => continue,
        }
    }
    Ok(out)
}

/// statmount of one mount: `None` when it is gone (ENOENT) or does not
/// describe a mount weir can show.
pub fn stat_one(sm: &mut Statmounter, id: u64) -> Result<Option<Mount>> {
    match sm.stat(id, MASK) {
        Ok(answer) => Ok(from_statmount(&answer)),
        Err(e) if e.errno() == Some(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(Error::Sys(e)),
    }
}

/// One reading of the whole table with `backend`'s source (listmount +
/// statmount for fanotify, mountinfo otherwise), sorted by id: what a
/// tracker's table must equal.
pub fn read_sorted(backend: Backend) -> Result<Vec<Mount>> {
    let mut mounts = match backend {
        Backend::Fanotify => read_statmount(&mut Statmounter::new(), &mut Vec::new())?,
        Backend::Mountinfo => read_mountinfo()?,
    };
    mounts.sort_by_key(|m| m.id);
    Ok(mounts)
}

/// One reading of the whole table from /proc/self/mountinfo.
pub fn read_mountinfo() -> Result<Vec<Mount>> {
    MountinfoFile::open_self()?.read()
}
