//! Directories' mtime and ctime, as `statx` gave them before their entries
//! were read: what lets a restart read again only the directories whose
//! times moved since (a change to a directory's entries moves both on
//! ext4, xfs, btrfs and tmpfs).
//!
//! Kept by directory slot, and only while they describe the entries the
//! tree holds: a change applied to a directory of a tree that keeps its
//! touches forgets its times, and a checkpoint takes them with the
//! directory's image. A tree whose times are all taken or forgotten holds
//! no memory for them.

/// A directory's times: seconds and nanoseconds, as `statx` gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DirTimes {
    /// Last change of its entries.
    pub mtime: (i64, u32),
    /// Last change of its inode (entries included).
    pub ctime: (i64, u32),
}

/// The times known, by directory slot.
#[derive(Clone, Debug, Default)]
pub(super) struct Times {
    slots: Vec<Option<DirTimes>>,
    set: usize,
}

impl Times {
    pub(super) fn set(&mut self, d: u32, t: DirTimes) {
        let i = d as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, None);
        }
        if self.slots[i].replace(t).is_none() {
            self.set += 1;
        }
    }

    pub(super) fn get(&self, d: u32) -> Option<DirTimes> {
        self.slots.get(d as usize).copied().flatten()
    }

    /// Forgets slot `d`'s times, and returns them.
    pub(super) fn take(&mut self, d: u32) -> Option<DirTimes> {
        let t = self.slots.get_mut(d as usize)?.take();
        if t.is_some() {
            self.set -= 1;
            if self.set == 0 {
                self.slots = Vec::new();
            }
        }
        t
    }

    /// Every slot with times.
    pub(super) fn known(&self) -> impl Iterator<Item = (u32, DirTimes)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i as u32, t)))
    }
}
