//! listmount, statmount and statx against real mounts, made inside a
//! private mount namespace (see `support`).

mod support;

use rustix::io::Errno;
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags, mount, mount_bind};
use weir_sys::listmount::listmount_all;
use weir_sys::statmount::{StatMount, Statmounter, attr, mask, propagation, sb};
use weir_sys::statx::mount_id_unique;

/// Every bit `StatMount` decodes.
const ALL: u64 = mask::DECODED;

/// `TMPFS_MAGIC` from `include/uapi/linux/magic.h`.
const TMPFS_MAGIC: u64 = 0x0102_1994;

fn stat(id: u64) -> StatMount {
    Statmounter::new().stat(id, ALL).expect("statmount")
}

/// The mount point of old id `id_old` in /proc/self/mountinfo (field 5).
fn mountinfo_point(id_old: u32) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").expect("read mountinfo");
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f[0] == id_old.to_string()).then(|| f[4].to_owned())
    })
}

#[test]
fn tmpfs_mount_is_listed_and_described() {
    support::run_in_private_ns("inner_tmpfs_mount_is_listed_and_described");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_tmpfs_mount_is_listed_and_described() {
    let Some(base) = support::private_base() else {
        return;
    };
    let m = base.mkdir("m");
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOATIME;
    mount("weir-src", &m, "tmpfs", flags, c"size=1m").unwrap();
    let id = mount_id_unique(&m).unwrap();
    let parent = mount_id_unique(base.path()).unwrap();
    assert_ne!(id, parent);
    let ids = listmount_all().unwrap();
    assert!(ids.contains(&id), "{id} not in {ids:?}");
    assert!(ids.contains(&parent), "{parent} not in {ids:?}");

    let sm = stat(id);
    eprintln!("statmount of a fresh tmpfs: {sm:?}");
    assert_eq!(sm.mnt_point.as_deref(), Some(support::bytes(&m)));
    assert_eq!(sm.mnt_root.as_deref(), Some(&b"/"[..]));
    assert_eq!(sm.fs_type.as_deref(), Some(&b"tmpfs"[..]));
    assert_eq!(sm.sb_source.as_deref(), Some(&b"weir-src"[..]));
    let opts = String::from_utf8(sm.mnt_opts.clone().unwrap()).unwrap();
    assert!(opts.split(',').any(|o| o == "size=1024k"), "{opts}");
    // tmpfs has no subtype: the kernel leaves the bit out.
    assert_eq!(sm.fs_subtype, None);
    assert_eq!(sm.mask & mask::FS_SUBTYPE, 0);
    assert_eq!(sm.mask & !ALL, 0, "unasked bits in {:#x}", sm.mask);
    assert_eq!(sm.propagate_from, Some(0));

    let mnt = sm.mnt.unwrap();
    assert_eq!(mnt.id, id);
    assert_eq!(mnt.parent_id, parent);
    assert_eq!(
        mnt.attr & (attr::NOSUID | attr::NODEV),
        attr::NOSUID | attr::NODEV
    );
    assert_eq!(mnt.attr & (attr::RDONLY | attr::NOEXEC), 0);
    assert_eq!(mnt.attr & attr::ATIME_MASK, attr::NOATIME);
    assert_eq!(mnt.propagation, propagation::MS_PRIVATE);
    assert_eq!((mnt.peer_group, mnt.master), (0, 0));
    // The old id is the one mountinfo shows for this mount point.
    assert_eq!(
        mountinfo_point(mnt.id_old).as_deref(),
        Some(m.to_str().unwrap())
    );

    let sbb = sm.sb.unwrap();
    assert_eq!(sbb.magic, TMPFS_MAGIC);
    assert_eq!(sbb.flags & sb::RDONLY, 0);
    // An anonymous superblock: major 0.
    assert_eq!(sbb.dev_major, 0);

    let ns = sm.mnt_ns_id.unwrap();
    assert_ne!(ns, 0);
    assert_eq!(stat(parent).mnt_ns_id, Some(ns));

    // Gone: ENOENT, and no longer listed.
    rustix::mount::unmount(&m, UnmountFlags::empty()).unwrap();
    let e = Statmounter::new().stat(id, ALL).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::NOENT), "{e}");
    assert!(!listmount_all().unwrap().contains(&id));
}

#[test]
fn superblock_flags_are_reported() {
    support::run_in_private_ns("inner_superblock_flags_are_reported");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_superblock_flags_are_reported() {
    let Some(base) = support::private_base() else {
        return;
    };
    let r = base.mkdir("r");
    let flags =
        MountFlags::RDONLY | MountFlags::SYNCHRONOUS | MountFlags::DIRSYNC | MountFlags::LAZYTIME;
    mount("weir-ro", &r, "tmpfs", flags, None).unwrap();
    let sm = stat(mount_id_unique(&r).unwrap());
    let want = sb::RDONLY | sb::SYNCHRONOUS | sb::DIRSYNC | sb::LAZYTIME;
    assert_eq!(sm.sb.unwrap().flags & want, want, "{sm:?}");
    // MS_RDONLY at mount time makes the mount read-only too.
    assert_ne!(sm.mnt.unwrap().attr & attr::RDONLY, 0);
}

#[test]
fn bind_mounts_and_propagation() {
    support::run_in_private_ns("inner_bind_mounts_and_propagation");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_bind_mounts_and_propagation() {
    let Some(base) = support::private_base() else {
        return;
    };
    let parent = mount_id_unique(base.path()).unwrap();
    let m = base.mkdir("m");
    mount("weir-src", &m, "tmpfs", MountFlags::empty(), None).unwrap();
    let sub = m.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let m_id = mount_id_unique(&m).unwrap();

    // A bind of a subdirectory: same superblock, its own root.
    let b = base.mkdir("b");
    mount_bind(&sub, &b).unwrap();
    let b_id = mount_id_unique(&b).unwrap();
    let (sm_m, sm_b) = (stat(m_id), stat(b_id));
    assert_eq!(sm_b.mnt_root.as_deref(), Some(&b"/sub"[..]));
    assert_eq!(sm_b.mnt_point.as_deref(), Some(support::bytes(&b)));
    assert_eq!(sm_b.sb, sm_m.sb);
    assert_eq!(sm_b.mnt.unwrap().parent_id, parent);

    // Read-only bind remount: the mount is read-only, not the superblock.
    rustix::mount::mount_remount(&b, MountFlags::BIND | MountFlags::RDONLY, "").unwrap();
    let sm_b = stat(b_id);
    assert_ne!(sm_b.mnt.unwrap().attr & attr::RDONLY, 0);
    assert_eq!(sm_b.sb.unwrap().flags & sb::RDONLY, 0);
    assert_eq!(stat(m_id).mnt.unwrap().attr & attr::RDONLY, 0);

    // Shared: a peer group.
    rustix::mount::mount_change(&m, MountPropagationFlags::SHARED).unwrap();
    let mnt_m = stat(m_id).mnt.unwrap();
    assert_eq!(mnt_m.propagation, propagation::MS_SHARED);
    assert!(mnt_m.peer_group > 0);

    // A bind of a shared mount joins its peer group; made a slave, it has
    // the group as its master.
    let b2 = base.mkdir("b2");
    mount_bind(&m, &b2).unwrap();
    let b2_id = mount_id_unique(&b2).unwrap();
    assert_eq!(stat(b2_id).mnt.unwrap().peer_group, mnt_m.peer_group);
    rustix::mount::mount_change(&b2, MountPropagationFlags::DOWNSTREAM).unwrap();
    let sm_b2 = stat(b2_id);
    let mnt_b2 = sm_b2.mnt.unwrap();
    assert_eq!(mnt_b2.propagation, propagation::MS_SLAVE);
    assert_eq!(mnt_b2.master, mnt_m.peer_group);
    assert_eq!(mnt_b2.peer_group, 0);

    rustix::mount::mount_change(&b, MountPropagationFlags::UNBINDABLE).unwrap();
    assert_eq!(
        stat(b_id).mnt.unwrap().propagation,
        propagation::MS_UNBINDABLE
    );

    rustix::mount::unmount(&b, UnmountFlags::empty()).unwrap();
    let e = Statmounter::new().stat(b_id, mask::MNT_BASIC).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::NOENT));
    assert!(!listmount_all().unwrap().contains(&b_id));
}

#[test]
fn many_mounts_are_paginated() {
    support::run_in_private_ns("inner_many_mounts_are_paginated");
}

#[test]
#[ignore = "run by its outer test in a private mount namespace"]
fn inner_many_mounts_are_paginated() {
    let Some(base) = support::private_base() else {
        return;
    };
    let before = listmount_all().unwrap();
    let src = base.mkdir("src");
    let t = base.mkdir("t");
    // More than one page of the internal listmount chunk (512 ids).
    let mut made = Vec::new();
    for _ in 0..1500 {
        mount_bind(&src, &t).unwrap();
        made.push(mount_id_unique(&t).unwrap());
    }
    let mut ids = Vec::with_capacity(8);
    weir_sys::listmount::listmount_into(&mut ids).unwrap();
    assert_eq!(ids.len(), before.len() + made.len());
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    for id in before.iter().chain(&made) {
        assert!(ids.binary_search(id).is_ok(), "{id} missing");
    }
    // Each stacked mount's parent is the one below it.
    let top = stat(*made.last().unwrap()).mnt.unwrap();
    assert_eq!(top.parent_id, made[made.len() - 2]);
}
