//! The table: mounts by id, and the comparison of two readings.

use std::collections::HashMap;

use crate::change::{Attrs, Change, ChangeKind, Seen};
use crate::model::Mount;

/// The mount table, keyed by mount id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    mounts: HashMap<u64, Mount>,
}

impl Table {
    /// A table of `mounts`. A later mount with an id already seen wins.
    pub fn from_mounts(mounts: Vec<Mount>) -> Table {
        Table {
            mounts: mounts.into_iter().map(|m| (m.id, m)).collect(),
        }
    }

    /// The number of mounts.
    pub fn len(&self) -> usize {
        self.mounts.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.mounts.is_empty()
    }

    /// The mount with this id.
    pub fn get(&self, id: u64) -> Option<&Mount> {
        self.mounts.get(&id)
    }

    /// Adds or replaces a mount; returns the one it replaced.
    pub fn insert(&mut self, m: Mount) -> Option<Mount> {
        self.mounts.insert(m.id, m)
    }

    /// Removes a mount.
    pub fn remove(&mut self, id: u64) -> Option<Mount> {
        self.mounts.remove(&id)
    }

    /// Every mount, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Mount> {
        self.mounts.values()
    }

    /// The ids of the mounts below `id` (its submounts, theirs and so on),
    /// parents before children. One pass over the table: a move, which is
    /// what asks, is rare next to attaches and detaches.
    pub fn descendants(&self, id: u64) -> Vec<u64> {
        let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
        for m in self.mounts.values() {
            // The root mount is its own parent in some namespaces.
            if m.id != m.parent_id {
                children.entry(m.parent_id).or_default().push(m.id);
            }
        }
        let mut out = Vec::new();
        let mut next = vec![id];
        while let Some(p) = next.pop() {
            if let Some(c) = children.remove(&p) {
                out.extend(&c);
                next.extend(c);
            }
        }
        out
    }

    /// Every mount, sorted by id (for a unique-id table, that is the order
    /// they were mounted in).
    pub fn to_sorted_vec(&self) -> Vec<Mount> {
        let mut v: Vec<Mount> = self.mounts.values().cloned().collect();
        v.sort_by_key(|m| m.id);
        v
    }

    /// Makes this table equal to `fresh` and returns the changes that take
    /// it there, in an order a consumer can replay: detaches (deepest
    /// first), moves and in-place changes, then attaches (shallowest first).
    /// A mount whose [`Attrs::IDENTITY`] differs under the same id is
    /// another mount: a detach and an attach.
    pub fn reconcile(&mut self, fresh: Vec<Mount>) -> Vec<Change> {
        self.reconcile_by(fresh, Attrs::IDENTITY, Seen::Compare)
    }

    /// [`Table::reconcile`], with the attributes that tell two mounts of one
    /// id apart given: a mount differing in any of `identity` is a detach and
    /// an attach, never a move or a change. The changes are marked `seen`.
    ///
    /// A restart under the mountinfo backend passes `IDENTITY | PLACE |
    /// SOURCE`: over a downtime the kernel's lowest-free-id reuse is likely,
    /// and a move cannot be told from a reuse there.
    pub fn reconcile_by(&mut self, fresh: Vec<Mount>, identity: Attrs, seen: Seen) -> Vec<Change> {
        let mut fresh: HashMap<u64, Mount> = fresh.into_iter().map(|m| (m.id, m)).collect();
        let mut detached = Vec::new();
        let mut moved = Vec::new();
        let mut attached = Vec::new();
        for (id, old) in &self.mounts {
            match fresh.remove(id) {
                None => detached.push(old.clone()),
                Some(new) => {
                    let d = Attrs::between(old, &new);
                    if d.intersects(identity) {
                        // A mountinfo id reused by another mount.
                        detached.push(old.clone());
                        attached.push(new);
                    } else if !d.is_empty() {
                        moved.push((old.clone(), new));
                    }
                }
            }
        }
        attached.extend(fresh.into_values());
        detached.sort_by_key(|m| std::cmp::Reverse(depth_key(m)));
        attached.sort_by_key(depth_key);
        moved.sort_by_key(|(_, n)| n.id);

        let mut out = Vec::with_capacity(detached.len() + moved.len() + attached.len());
        for m in detached {
            self.mounts.remove(&m.id);
            out.push(Change {
                kind: ChangeKind::Detach(m),
                seen,
            });
        }
        for (old, new) in moved {
            out.extend(Change::between(&old, &new, seen));
            self.mounts.insert(new.id, new);
        }
        for m in attached {
            self.mounts.insert(m.id, m.clone());
            out.push(Change {
                kind: ChangeKind::Attach(m),
                seen,
            });
        }
        out
    }
}

/// Sorts parents before children: a child's mount point is longer than its
/// parent's, and ids break ties.
fn depth_key(m: &Mount) -> (usize, u64) {
    (m.mount_point.len(), m.id)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::{MountFlags, Propagation, SuperFlags};

    fn mount(id: u64, parent: u64, point: &str) -> Mount {
        Mount {
            id,
            parent_id: parent,
            old_id: id as u32,
            old_parent_id: parent as u32,
            major: 0,
            minor: 40,
            root: b"/".as_slice().into(),
            mount_point: point.as_bytes().into(),
            fstype: b"tmpfs".as_slice().into(),
            subtype: None,
            source: b"tmpfs".as_slice().into(),
            flags: MountFlags::RELATIME,
            super_flags: SuperFlags::default(),
            fs_options: b"size=1024k".as_slice().into(),
            propagation: Propagation::default(),
        }
    }

    /// Applies changes to a table the way a log consumer would.
    fn replay(t: &mut HashMap<u64, Mount>, changes: &[Change]) {
        for c in changes {
            match &c.kind {
                ChangeKind::Attach(m) => assert!(t.insert(m.id, m.clone()).is_none()),
                ChangeKind::Detach(m) => assert!(t.remove(&m.id).is_some()),
                ChangeKind::Move { old, new } | ChangeKind::Change { old, new } => {
                    assert_eq!(t.get(&old.id), Some(old), "change from a stale state");
                    t.insert(new.id, new.clone());
                }
                ChangeKind::AttachGone { .. } | ChangeKind::DetachGone { .. } => {
                    panic!("a comparison cannot see a mount that is gone")
                }
            }
        }
    }

    #[test]
    fn descendants_are_the_whole_subtree_and_a_cycle_ends() {
        let t = Table::from_mounts(vec![
            mount(1, 1, "/"),
            mount(2, 1, "/a"),
            mount(3, 2, "/a/b"),
            mount(4, 3, "/a/b/c"),
            mount(5, 2, "/a/d"),
            mount(6, 1, "/e"),
        ]);
        let mut below = t.descendants(2);
        below.sort_unstable();
        assert_eq!(below, [3, 4, 5]);
        assert!(t.descendants(6).is_empty());
        // The root is its own parent: it is not below itself.
        assert_eq!(t.descendants(1).len(), 5);
        // Parent ids from a corrupt mountinfo may loop; each mount is
        // still listed once.
        let looped = Table::from_mounts(vec![mount(7, 8, "/x"), mount(8, 7, "/y")]);
        let mut below = looped.descendants(7);
        below.sort_unstable();
        assert_eq!(below, [7, 8]);
    }

    #[test]
    fn each_kind_of_difference_gives_its_change_in_replay_order() {
        let mut t = Table::from_mounts(vec![
            mount(1, 1, "/"),
            mount(2, 1, "/a"),
            mount(3, 2, "/a/b"),
            mount(4, 1, "/c"),
            mount(5, 1, "/e"),
        ]);
        let mut moved = mount(4, 1, "/d");
        moved.flags = MountFlags(MountFlags::RELATIME.0 | MountFlags::RDONLY.0);
        let mut shared = mount(5, 1, "/e");
        shared.propagation.shared = Some(7);
        let fresh = vec![mount(1, 1, "/"), moved, shared, mount(9, 1, "/z")];
        let changes = t.reconcile(fresh.clone());
        let kinds: Vec<String> = changes
            .iter()
            .map(|c| format!("{} {}", c.name(), c.id()))
            .collect();
        assert_eq!(
            kinds,
            [
                "DETACH 3", "DETACH 2", "MOVE 4", "CHANGE 4", "CHANGE 5", "ATTACH 9"
            ]
        );
        assert!(changes.iter().all(|c| c.seen == Seen::Compare));
        assert_eq!(t, Table::from_mounts(fresh));
    }

    /// mountinfo ids are reused: the same id on another filesystem is a
    /// detach and an attach, never a change.
    #[test]
    fn a_reused_id_with_another_identity_is_detach_then_attach() {
        let mut t = Table::from_mounts(vec![mount(2, 1, "/a")]);
        let mut other = mount(2, 1, "/a");
        other.root = b"/sub".as_slice().into();
        let changes = t.reconcile(vec![other]);
        assert!(matches!(changes[0].kind, ChangeKind::Detach(_)));
        assert!(matches!(changes[1].kind, ChangeKind::Attach(_)));
        assert_eq!(changes.len(), 2);
    }

    fn arb_table() -> impl Strategy<Value = Vec<Mount>> {
        proptest::collection::btree_map(1u64..40, (0u8..4, 0u8..3, any::<bool>()), 0..30).prop_map(
            |m| {
                m.into_iter()
                    .map(|(id, (place, opts, shared))| {
                        let mut x = mount(id, 1, &format!("/m{id}/{place}"));
                        if opts == 1 {
                            x.flags.insert(MountFlags::RDONLY);
                        }
                        if opts == 2 {
                            x.fs_options = b"size=2m".as_slice().into();
                        }
                        if shared {
                            x.propagation.shared = Some(id);
                        }
                        x
                    })
                    .collect()
            },
        )
    }

    proptest! {
        /// Replaying the changes of a comparison on the old table gives the
        /// new one, and the table itself equals the fresh reading.
        #[test]
        fn replaying_a_comparison_gives_the_fresh_table(old in arb_table(), new in arb_table()) {
            let mut t = Table::from_mounts(old.clone());
            let changes = t.reconcile(new.clone());
            let mut replayed: HashMap<u64, Mount> = old.into_iter().map(|m| (m.id, m)).collect();
            replay(&mut replayed, &changes);
            let expect = Table::from_mounts(new);
            prop_assert_eq!(&replayed, &expect.mounts);
            prop_assert_eq!(t, expect);
        }
    }
}
