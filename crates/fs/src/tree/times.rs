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

/// The times known, by directory slot: each as two nanosecond counts
/// (16 bytes a directory, a tenth of a node's), [`NONE`] for unknown.
#[derive(Clone, Debug, Default)]
pub(super) struct Times {
    slots: Vec<[i64; 2]>,
    set: usize,
}

const NONE: [i64; 2] = [i64::MIN, i64::MIN];

fn ns((sec, nsec): (i64, u32)) -> Option<i64> {
    sec.checked_mul(1_000_000_000)?
        .checked_add(i64::from(nsec))
        .filter(|&n| n != i64::MIN)
}

fn pack(t: DirTimes) -> Option<[i64; 2]> {
    Some([ns(t.mtime)?, ns(t.ctime)?])
}

fn unpack(p: [i64; 2]) -> Option<DirTimes> {
    let t = |n: i64| {
        (
            n.div_euclid(1_000_000_000),
            n.rem_euclid(1_000_000_000) as u32,
        )
    };
    (p != NONE).then(|| DirTimes {
        mtime: t(p[0]),
        ctime: t(p[1]),
    })
}

impl Times {
    /// Sets slot `d`'s times; times beyond what 64-bit nanoseconds hold
    /// (some 292 years either side of 1970, set by hand) are not kept,
    /// and the directory is read again.
    pub(super) fn set(&mut self, d: u32, t: DirTimes) {
        let Some(p) = pack(t) else {
            self.take(d);
            return;
        };
        let i = d as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, NONE);
        }
        if std::mem::replace(&mut self.slots[i], p) == NONE {
            self.set += 1;
        }
    }

    pub(super) fn get(&self, d: u32) -> Option<DirTimes> {
        self.slots.get(d as usize).copied().and_then(unpack)
    }

    /// Forgets slot `d`'s times, and returns them.
    pub(super) fn take(&mut self, d: u32) -> Option<DirTimes> {
        let slot = self.slots.get_mut(d as usize)?;
        let t = unpack(std::mem::replace(slot, NONE));
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
            .filter_map(|(i, &p)| unpack(p).map(|t| (i as u32, t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_kept_exactly_or_not_at_all() {
        let mut t = Times::default();
        let a = DirTimes {
            mtime: (1_700_000_000, 999_999_999),
            ctime: (-5, 1),
        };
        t.set(3, a);
        assert_eq!(t.get(3), Some(a));
        assert_eq!(t.get(2), None);
        // Beyond 64-bit nanoseconds: unknown, so the directory is read.
        let far = DirTimes {
            mtime: (i64::MAX / 2, 0),
            ctime: (0, 0),
        };
        t.set(4, far);
        assert_eq!(t.get(4), None);
        assert_eq!(t.take(3), Some(a));
        assert!(t.slots.is_empty(), "no memory once none is known");
    }
}
