//! The line `weir mounts watch` prints per change of the mount tracker:
//! a change's text form, kept here with the table and JSON forms of mounts.
//!
//! ```text
//! ATTACH 2147483700 /mnt/x tmpfs tmpfs rw,relatime
//! DETACH 2147483700 /mnt/x
//! MOVE 2147483700 /mnt/x -> /mnt/y
//! CHANGE 2147483700 /mnt/y options,super: options=ro,relatime super=ro,size=1024k
//! ```
//!
//! Paths use the log's text escaping ([`escape`]), so a line
//! stays one line and shows every byte, as in `weir log tail`.

use std::fmt::Write as _;

use weir_mounts::{Attrs, Change, ChangeKind};

use crate::bytes::escape;
use crate::mounts_table::propagation_word;

/// One change as a line, without the newline.
pub fn change_line(c: &Change) -> String {
    let mut s = format!("{} {}", c.name(), c.id());
    match &c.kind {
        ChangeKind::Attach(m) => {
            let _ = write!(
                s,
                " {} {} {} {}",
                escape(&m.mount_point),
                escape(&m.fstype_full()),
                escape(&m.source),
                escape(&m.options())
            );
        }
        ChangeKind::AttachGone { .. } => s.push_str(" (gone before it was read)"),
        ChangeKind::Detach(m) => {
            let _ = write!(s, " {}", escape(&m.mount_point));
        }
        ChangeKind::DetachGone { .. } => {}
        ChangeKind::Move { old, new } => {
            let _ = write!(
                s,
                " {} -> {}",
                escape(&old.mount_point),
                escape(&new.mount_point)
            );
        }
        ChangeKind::Change { old, new } => {
            let d = Attrs::between(old, new);
            let _ = write!(s, " {} {}:", escape(&new.mount_point), d.to_text());
            for (a, key, _) in Attrs::VALUED {
                if !d.contains(a) {
                    continue;
                }
                if a == Attrs::PROPAGATION {
                    let _ = write!(s, " {key}={}", propagation_word(&new.propagation));
                } else if let Some(v) = a.value_of(new) {
                    let _ = write!(s, " {key}={}", escape(&v));
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use weir_mounts::{Mount, MountFlags, Propagation, Seen, SuperFlags};

    use super::*;

    fn mount(point: &[u8]) -> Mount {
        Mount {
            id: 7,
            parent_id: 1,
            old_id: 7,
            old_parent_id: 1,
            major: 0,
            minor: 50,
            root: b"/".as_slice().into(),
            mount_point: point.into(),
            fstype: b"tmpfs".as_slice().into(),
            subtype: None,
            source: b"none".as_slice().into(),
            flags: MountFlags::RELATIME,
            super_flags: SuperFlags::default(),
            fs_options: Box::default(),
            propagation: Propagation::default(),
        }
    }

    #[test]
    fn a_hostile_mount_point_stays_on_one_line_and_keeps_its_bytes() {
        let c = Change {
            kind: ChangeKind::Attach(mount(b"/mnt/new\nline\xff")),
            seen: Seen::Event,
        };
        assert_eq!(
            change_line(&c),
            "ATTACH 7 /mnt/new\\x0aline\\xff tmpfs none rw,relatime"
        );
    }

    #[test]
    fn a_change_names_what_changed_and_its_new_value() {
        let old = mount(b"/m");
        let mut new = old.clone();
        new.flags.insert(MountFlags::RDONLY);
        new.propagation.shared = Some(3);
        let c = Change {
            kind: ChangeKind::Change { old, new },
            seen: Seen::Compare,
        };
        assert_eq!(
            change_line(&c),
            "CHANGE 7 /m options,propagation: options=ro,relatime propagation=shared:3"
        );
    }
}
