//! The one `Mount` model, whichever source filled it.
//!
//! listmount + statmount and /proc/self/mountinfo describe a mount in
//! different shapes: statmount gives flag words and the filesystem's own
//! options apart, mountinfo gives text. Both are turned into this one model
//! so that a table read one way compares equal to the same table read the
//! other way (apart from the ids: see [`Mount::id`]).
//!
//! Paths and names keep their bytes: the kernel allows any byte but NUL in a
//! path, so nothing here is a `String`.
//!
//! Everything here is serde-serializable, so a daemon can checkpoint its
//! table (see [`crate::Previous`]); byte paths serialize as byte sequences.
//! Flag words reject unknown bits when deserialized: a checkpoint is read
//! back from disk and is treated as hostile.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Per-mount flags (`MOUNT_ATTR_*` in statmount, the first options field of
/// mountinfo). A bit set.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct MountFlags(pub u32);

impl MountFlags {
    /// `ro`: the mount is read-only.
    pub const RDONLY: MountFlags = MountFlags(1 << 0);
    /// `nosuid`.
    pub const NOSUID: MountFlags = MountFlags(1 << 1);
    /// `nodev`.
    pub const NODEV: MountFlags = MountFlags(1 << 2);
    /// `noexec`.
    pub const NOEXEC: MountFlags = MountFlags(1 << 3);
    /// `noatime`.
    pub const NOATIME: MountFlags = MountFlags(1 << 4);
    /// `nodiratime`.
    pub const NODIRATIME: MountFlags = MountFlags(1 << 5);
    /// `relatime`.
    pub const RELATIME: MountFlags = MountFlags(1 << 6);
    /// `nosymfollow`.
    pub const NOSYMFOLLOW: MountFlags = MountFlags(1 << 7);
    /// `idmapped`: the mount has an idmapping.
    pub const IDMAPPED: MountFlags = MountFlags(1 << 8);

    /// The flags in the order mountinfo prints them, with their names.
    /// `ro`/`rw` is not here: it is always printed first, from [`Self::RDONLY`].
    pub const NAMED: [(MountFlags, &'static str); 8] = [
        (MountFlags::NOSUID, "nosuid"),
        (MountFlags::NODEV, "nodev"),
        (MountFlags::NOEXEC, "noexec"),
        (MountFlags::NOATIME, "noatime"),
        (MountFlags::NODIRATIME, "nodiratime"),
        (MountFlags::RELATIME, "relatime"),
        (MountFlags::NOSYMFOLLOW, "nosymfollow"),
        (MountFlags::IDMAPPED, "idmapped"),
    ];

    /// Every bit this model defines.
    pub const ALL: MountFlags = MountFlags(0x1ff);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: MountFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets the bits of `other`.
    pub fn insert(&mut self, other: MountFlags) {
        self.0 |= other.0;
    }

    /// The flags as mountinfo prints them: `rw,nosuid,relatime`.
    pub fn to_text(self) -> String {
        let named = MountFlags::NAMED.iter().filter(|(f, _)| self.contains(*f));
        flags_text(self.contains(MountFlags::RDONLY), named.map(|(_, n)| *n))
    }
}

impl fmt::Debug for MountFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

/// Superblock flags that mountinfo prints before the filesystem's own
/// options (`SB_*` in statmount's `sb_flags`). A bit set.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct SuperFlags(pub u32);

impl SuperFlags {
    /// `ro`: the filesystem is read-only.
    pub const RDONLY: SuperFlags = SuperFlags(1 << 0);
    /// `sync`.
    pub const SYNCHRONOUS: SuperFlags = SuperFlags(1 << 1);
    /// `mand`.
    pub const MANDLOCK: SuperFlags = SuperFlags(1 << 2);
    /// `dirsync`.
    pub const DIRSYNC: SuperFlags = SuperFlags(1 << 3);
    /// `lazytime`.
    pub const LAZYTIME: SuperFlags = SuperFlags(1 << 4);

    /// The flags in the order mountinfo prints them after `ro`/`rw`.
    pub const NAMED: [(SuperFlags, &'static str); 4] = [
        (SuperFlags::SYNCHRONOUS, "sync"),
        (SuperFlags::DIRSYNC, "dirsync"),
        (SuperFlags::MANDLOCK, "mand"),
        (SuperFlags::LAZYTIME, "lazytime"),
    ];

    /// Every bit this model defines.
    pub const ALL: SuperFlags = SuperFlags(0x1f);

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: SuperFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets the bits of `other`.
    pub fn insert(&mut self, other: SuperFlags) {
        self.0 |= other.0;
    }

    /// The flags as mountinfo prints them before the filesystem's own
    /// options: `ro,sync`.
    pub fn to_text(self) -> String {
        let named = SuperFlags::NAMED.iter().filter(|(f, _)| self.contains(*f));
        flags_text(self.contains(SuperFlags::RDONLY), named.map(|(_, n)| *n))
    }
}

impl fmt::Debug for SuperFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

/// A flag word with bits this model does not define (read back from a
/// checkpoint written by something else, or damaged).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown flag bits {bits:#x}")]
pub struct UnknownBits {
    /// The bits that are not defined.
    pub bits: u32,
}

impl TryFrom<u32> for MountFlags {
    type Error = UnknownBits;
    fn try_from(v: u32) -> Result<Self, UnknownBits> {
        match v & !MountFlags::ALL.0 {
            0 => Ok(MountFlags(v)),
            bits => Err(UnknownBits { bits }),
        }
    }
}

impl From<MountFlags> for u32 {
    fn from(f: MountFlags) -> u32 {
        f.0
    }
}

impl TryFrom<u32> for SuperFlags {
    type Error = UnknownBits;
    fn try_from(v: u32) -> Result<Self, UnknownBits> {
        match v & !SuperFlags::ALL.0 {
            0 => Ok(SuperFlags(v)),
            bits => Err(UnknownBits { bits }),
        }
    }
}

impl From<SuperFlags> for u32 {
    fn from(f: SuperFlags) -> u32 {
        f.0
    }
}

/// `ro` or `rw`, then the names of the flags that are set, comma-separated:
/// how mountinfo prints both flag sets.
fn flags_text<'a>(rdonly: bool, names: impl Iterator<Item = &'a str>) -> String {
    let mut s = String::from(if rdonly { "ro" } else { "rw" });
    for name in names {
        s.push(',');
        s.push_str(name);
    }
    s
}

/// How mount events propagate to and from this mount.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Propagation {
    /// The peer group this mount shares events with (`shared:N`), if shared.
    pub shared: Option<u64>,
    /// The peer group this mount receives events from (`master:N`), if a slave.
    pub master: Option<u64>,
    /// The nearest dominating peer group in this namespace
    /// (`propagate_from:N`), when it differs from `master`.
    pub propagate_from: Option<u64>,
    /// `unbindable`.
    pub unbindable: bool,
}

impl Propagation {
    /// Private: neither shared, slave nor unbindable.
    pub fn is_private(&self) -> bool {
        *self == Propagation::default()
    }

    /// The propagation as mountinfo's optional fields print it, separated by
    /// spaces: `shared:1 master:2`, or `private` when there is none.
    pub fn to_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(g) = self.shared {
            parts.push(format!("shared:{g}"));
        }
        if let Some(g) = self.master {
            parts.push(format!("master:{g}"));
            if let Some(p) = self.propagate_from {
                parts.push(format!("propagate_from:{p}"));
            }
        }
        if self.unbindable {
            parts.push("unbindable".to_owned());
        }
        if parts.is_empty() {
            "private".to_owned()
        } else {
            parts.join(" ")
        }
    }
}

/// One mount.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mount {
    /// The mount's id. From listmount + statmount it is the unique 64-bit id
    /// (never reused while the system runs). From mountinfo it is the old
    /// 32-bit id, which the kernel reuses after an unmount.
    pub id: u64,
    /// The parent mount's id, of the same kind as `id`. A namespace's root
    /// mount is its own parent, or has a parent outside the namespace.
    pub parent_id: u64,
    /// The old 32-bit id that /proc/self/mountinfo shows (both sources).
    pub old_id: u32,
    /// The parent's old 32-bit id.
    pub old_parent_id: u32,
    /// Major number of the filesystem's device (`st_dev`).
    pub major: u32,
    /// Minor number of the filesystem's device.
    pub minor: u32,
    /// The directory of the filesystem that is mounted (`/` unless a bind
    /// mount of a subtree).
    pub root: Box<[u8]>,
    /// Where it is mounted, relative to the reader's root.
    pub mount_point: Box<[u8]>,
    /// The filesystem type, without the subtype: `fuse`, `ext4`.
    pub fstype: Box<[u8]>,
    /// The subtype (`sshfs` in `fuse.sshfs`), if any.
    pub subtype: Option<Box<[u8]>>,
    /// The mount source as given to mount(2); `none` when there was none.
    pub source: Box<[u8]>,
    /// Per-mount flags.
    pub flags: MountFlags,
    /// Superblock flags.
    pub super_flags: SuperFlags,
    /// The filesystem's own options, comma-separated as the kernel prints
    /// them (`size=1024k,mode=755`), without the superblock flags. Escapes
    /// are decoded.
    pub fs_options: Box<[u8]>,
    /// Propagation.
    pub propagation: Propagation,
}

impl Mount {
    /// `fstype` with the subtype, as mountinfo and findmnt show it: `fuse.sshfs`.
    pub fn fstype_full(&self) -> Vec<u8> {
        let mut t = self.fstype.to_vec();
        if let Some(sub) = &self.subtype {
            t.push(b'.');
            t.extend_from_slice(sub);
        }
        t
    }

    /// The superblock options as mountinfo prints them: the superblock flags
    /// (`rw`, `sync`, ...) then the filesystem's own options.
    pub fn super_options(&self) -> Vec<u8> {
        let mut s = self.super_flags.to_text().into_bytes();
        if !self.fs_options.is_empty() {
            s.push(b',');
            s.extend_from_slice(&self.fs_options);
        }
        s
    }

    /// All options as findmnt's OPTIONS column shows them: the per-mount
    /// flags, then the filesystem's own options.
    pub fn options(&self) -> Vec<u8> {
        let mut s = self.flags.to_text().into_bytes();
        if !self.fs_options.is_empty() {
            s.push(b',');
            s.extend_from_slice(&self.fs_options);
        }
        s
    }

    /// `major:minor`.
    pub fn dev_text(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}
