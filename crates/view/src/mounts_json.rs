//! The JSON form of `weir mounts --json`: an array with one object per
//! mount.
//!
//! Paths, the source, the type and the options are bytes the kernel does not
//! require to be UTF-8; they use the convention of names in
//! `weir log tail --json` ([`Bytes`]): a string when valid UTF-8, else an
//! array of byte values. Ids are numbers: mount ids are not opaque bytes.

use serde::Serialize;
use weir_mounts::Mount;

use crate::bytes::Bytes;

#[derive(Serialize)]
struct JsonMount<'a> {
    id: u64,
    parent_id: u64,
    old_id: u32,
    old_parent_id: u32,
    mount_point: Bytes<'a>,
    root: Bytes<'a>,
    source: Bytes<'a>,
    /// With the subtype: `fuse.sshfs`.
    fstype: Bytes<'a>,
    /// Per-mount flags and the filesystem's options, as findmnt's OPTIONS.
    options: Bytes<'a>,
    vfs_options: String,
    /// Superblock flags and the filesystem's options, as mountinfo's.
    fs_options: Bytes<'a>,
    /// mountinfo's optional fields (`shared:1 master:2`) or `private`.
    propagation: String,
    shared: Option<u64>,
    master: Option<u64>,
    propagate_from: Option<u64>,
    unbindable: bool,
    major: u32,
    minor: u32,
}

/// The mounts as a JSON array, one object per line, ending in `\n`.
pub fn mounts_json(mounts: &[Mount]) -> String {
    let mut out = String::from("[\n");
    for (i, m) in mounts.iter().enumerate() {
        let (fstype, options, fs_options) = (m.fstype_full(), m.options(), m.super_options());
        let j = JsonMount {
            id: m.id,
            parent_id: m.parent_id,
            old_id: m.old_id,
            old_parent_id: m.old_parent_id,
            mount_point: Bytes(&m.mount_point),
            root: Bytes(&m.root),
            source: Bytes(&m.source),
            fstype: Bytes(&fstype),
            options: Bytes(&options),
            vfs_options: m.flags.to_text(),
            fs_options: Bytes(&fs_options),
            propagation: m.propagation.to_text(),
            shared: m.propagation.shared,
            master: m.propagation.master,
            propagate_from: m.propagation.propagate_from,
            unbindable: m.propagation.unbindable,
            major: m.major,
            minor: m.minor,
        };
        out.push_str(&serde_json::to_string(&j).expect("a mount serializes to JSON"));
        out.push_str(if i + 1 < mounts.len() { ",\n" } else { "\n" });
    }
    out.push_str("]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use weir_mounts::{MountFlags, Propagation, SuperFlags};

    #[test]
    fn objects_with_raw_bytes() {
        let m = Mount {
            id: 0x8000_0001,
            parent_id: 0x8000_0000,
            old_id: 21,
            old_parent_id: 1,
            major: 8,
            minor: 1,
            root: b"/sub".as_slice().into(),
            mount_point: b"/mnt/x\xff y".as_slice().into(),
            fstype: b"ext4".as_slice().into(),
            subtype: None,
            source: b"/dev/sda1".as_slice().into(),
            flags: MountFlags::RDONLY,
            super_flags: SuperFlags::default(),
            fs_options: b"errors=remount-ro".as_slice().into(),
            propagation: Propagation {
                master: Some(2),
                ..Propagation::default()
            },
        };
        let v: Value = serde_json::from_str(&mounts_json(&[m.clone(), m])).unwrap();
        let a = v.as_array().unwrap();
        assert_eq!(a.len(), 2);
        let o = &a[0];
        assert_eq!(o["id"], json!(0x8000_0001u64));
        assert_eq!(o["parent_id"], json!(0x8000_0000u64));
        assert_eq!(
            o["mount_point"],
            json!([47, 109, 110, 116, 47, 120, 255, 32, 121])
        );
        assert_eq!(o["root"], json!("/sub"));
        assert_eq!(o["fstype"], json!("ext4"));
        assert_eq!(o["options"], json!("ro,errors=remount-ro"));
        assert_eq!(o["vfs_options"], json!("ro"));
        assert_eq!(o["fs_options"], json!("rw,errors=remount-ro"));
        assert_eq!(o["propagation"], json!("master:2"));
        assert_eq!((&o["shared"], &o["master"]), (&json!(null), &json!(2)));
        assert_eq!((&o["major"], &o["minor"]), (&json!(8), &json!(1)));
        assert_eq!(mounts_json(&[]), "[\n]\n");
    }
}
