//! The tree of `weir mounts` (findmnt's default form): each mount under
//! its parent, drawn in the TARGET column with libsmartcols' characters.
//!
//! The order is findmnt's: a parent before its children, siblings by the
//! 32-bit mountinfo id (libmount walks children by that id). A mount whose
//! parent is not in the table (the namespace's root, or one whose parent
//! went while the table was read) is a root, and roots come in the same
//! order. Pure: the rows' order and prefixes only, no I/O.

use std::collections::{HashMap, HashSet};

use weir_mounts::Mount;

/// The characters a branch is drawn with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charset {
    /// `├─`, `└─`, `│ `: what findmnt draws in a UTF-8 locale.
    Utf8,
    /// `|-`, `` `- ``, `| `: `--ascii`.
    Ascii,
}

impl Charset {
    /// (branch to a sibling that follows, last branch, line past a level)
    fn glyphs(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Charset::Utf8 => ("├─", "└─", "│ "),
            Charset::Ascii => ("|-", "`-", "| "),
        }
    }
}

/// The mounts in tree order: each one's index in `mounts` and the prefix
/// drawn before its TARGET.
pub fn order(mounts: &[Mount], charset: Charset) -> Vec<(usize, String)> {
    let by_id: HashMap<u64, usize> = mounts.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
    let key = |&i: &usize| (mounts[i].old_id, mounts[i].id);
    let mut children: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, m) in mounts.iter().enumerate() {
        if m.parent_id != m.id && by_id.contains_key(&m.parent_id) {
            children.entry(m.parent_id).or_default().push(i);
        } else {
            roots.push(i);
        }
    }
    for c in children.values_mut() {
        c.sort_by_key(key);
    }
    roots.sort_by_key(key);

    let (mid, last, bar) = charset.glyphs();
    let mut out = Vec::with_capacity(mounts.len());
    let mut seen = HashSet::with_capacity(mounts.len());
    // A table read while it changed can hold a loop of parents with no
    // root; whatever the walk from the roots did not reach is a root too,
    // so every mount is printed, once.
    let mut pending = roots;
    let mut next_unseen = 0;
    loop {
        for root in std::mem::take(&mut pending) {
            walk(
                root,
                mounts,
                &children,
                (mid, last, bar),
                &mut seen,
                &mut out,
            );
        }
        while next_unseen < mounts.len() && seen.contains(&next_unseen) {
            next_unseen += 1;
        }
        if next_unseen == mounts.len() {
            return out;
        }
        pending.push(next_unseen);
    }
}

/// Depth-first from `root`, without recursion (a chain of thousands of
/// nested mounts is legal). `open[d]`: whether the ancestor at depth `d+1`
/// has siblings still to come, which draws a bar through its level.
fn walk(
    root: usize,
    mounts: &[Mount],
    children: &HashMap<u64, Vec<usize>>,
    (mid, last, bar): (&str, &str, &str),
    seen: &mut HashSet<usize>,
    out: &mut Vec<(usize, String)>,
) {
    // (mount, depth, is the last of its siblings)
    let mut stack = vec![(root, 0usize, true)];
    let mut open: Vec<bool> = Vec::new();
    while let Some((i, depth, is_last)) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        let mut prefix = String::new();
        if depth > 0 {
            open.truncate(depth - 1);
            for &o in &open {
                prefix.push_str(if o { bar } else { "  " });
            }
            prefix.push_str(if is_last { last } else { mid });
            open.push(!is_last);
        }
        out.push((i, prefix));
        if let Some(kids) = children.get(&mounts[i].id) {
            let n = kids.len();
            for (k, &c) in kids.iter().enumerate().rev() {
                stack.push((c, depth + 1, k + 1 == n));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_mounts::{MountFlags, Propagation, SuperFlags};

    fn mount(id: u64, parent_id: u64, old_id: u32) -> Mount {
        Mount {
            id,
            parent_id,
            old_id,
            old_parent_id: 0,
            major: 0,
            minor: 0,
            root: b"/".as_slice().into(),
            mount_point: format!("/{id}").into_bytes().into(),
            fstype: b"tmpfs".as_slice().into(),
            subtype: None,
            source: b"t".as_slice().into(),
            flags: MountFlags::default(),
            super_flags: SuperFlags::default(),
            fs_options: Box::default(),
            propagation: Propagation::default(),
        }
    }

    fn drawn(mounts: &[Mount], charset: Charset) -> Vec<String> {
        order(mounts, charset)
            .into_iter()
            .map(|(i, p)| format!("{p}{}", mounts[i].id))
            .collect()
    }

    #[test]
    fn draws_levels_as_findmnt() {
        // 1 ─┬ 2 ─ 3
        //    └ 4 ─ 5, 6     (siblings by old id: 6 before 5)
        let t = [
            mount(1, 0, 1),
            mount(2, 1, 2),
            mount(3, 2, 3),
            mount(4, 1, 4),
            mount(5, 4, 9),
            mount(6, 4, 8),
        ];
        assert_eq!(
            drawn(&t, Charset::Utf8),
            ["1", "├─2", "│ └─3", "└─4", "  ├─6", "  └─5"]
        );
        assert_eq!(
            drawn(&t, Charset::Ascii),
            ["1", "|-2", "| `-3", "`-4", "  |-6", "  `-5"]
        );
    }

    #[test]
    fn orphans_and_loops_are_roots() {
        // 7's parent is gone; 8 and 9 are each other's parent.
        let t = [
            mount(1, 0, 5),
            mount(7, 99, 2),
            mount(8, 9, 3),
            mount(9, 8, 4),
        ];
        assert_eq!(drawn(&t, Charset::Utf8), ["7", "1", "8", "└─9"]);
        // A mount that is its own parent (early rootfs) is a root.
        assert_eq!(drawn(&[mount(1, 1, 1)], Charset::Utf8), ["1"]);
    }

    #[test]
    fn deep_chains_need_no_recursion() {
        let t: Vec<Mount> = (1..=5000u64)
            .map(|i| mount(i, i - 1, u32::try_from(i).unwrap()))
            .collect();
        let o = order(&t, Charset::Ascii);
        assert_eq!(o.len(), 5000);
        assert_eq!(o[4999].1.len(), 2 * 4999);
    }
}
