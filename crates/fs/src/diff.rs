//! The comparison of two trees: the changes that turn what was logged
//! into what is there, in an order in which each one applies.
//!
//! Names are compared per directory (a link is a directory, a name and
//! the id there). A link that went and one that came with the same id are
//! a rename, so a directory moved while weir could not see it is one RENME
//! and keeps its subtree, rather than an RMDIR of everything below and a
//! MKDIR of it all again. The order:
//! 1. renames, each once its destination is free (or holds an entry that
//!    is going anyway, which it then overwrites) and, for a directory, is
//!    not below itself; two entries that swapped places are one exchange;
//! 2. removals of what is left of the old links, deepest first, so every
//!    RMDIR is of an empty directory;
//! 3. creations, parents first.
//!
//! A rename that cannot be ordered (a cycle of three or more) is a
//! removal and a creation instead.

use std::collections::{HashMap, HashSet};

use crate::change::Change;
use crate::id::ObjectId;
use crate::tree::{Entry, Set, Tree};

type Link = (ObjectId, Box<[u8]>);
/// A link with its depth, as [`Tree::links_top_down`] lists them.
type TopDown = (ObjectId, Box<[u8]>, Entry, usize);

/// The changes from `old` to `new` (both with the same root), applied to
/// `old` in order, give `new`.
pub fn diff(old: &Tree, new: &Tree) -> Vec<Change> {
    diff_with(old, new, Tree::links_top_down)
}

/// As [`diff`], when only the entries of the directories in `scope` may
/// differ (those of `new`, and of `old`, subtrees gone included): a
/// comparison that costs the size of what changed, not of the tree.
pub fn diff_in(old: &Tree, new: &Tree, scope: &Set<ObjectId>) -> Vec<Change> {
    diff_with(old, new, |t| t.links_in(scope))
}

fn diff_with(old: &Tree, new: &Tree, links: impl Fn(&Tree) -> Vec<TopDown>) -> Vec<Change> {
    let mut out = Vec::new();
    let mut w = old.clone();
    let old_links = links(old);
    let new_links = links(new);
    let same =
        |t: &Tree, p: &ObjectId, n: &[u8], e: &Entry| t.lookup(p, n).is_some_and(|x| x.id == e.id);
    // Links that went, and links that came, by id.
    let mut gone: HashMap<ObjectId, Vec<Link>> = HashMap::new();
    for (p, n, e, _) in &old_links {
        if !same(new, p, n, e) {
            gone.entry(e.id.clone())
                .or_default()
                .push((p.clone(), n.clone()));
        }
    }
    let mut came: Vec<(Link, Entry, usize)> = Vec::new();
    for (p, n, e, depth) in &new_links {
        if !same(old, p, n, e) {
            came.push(((p.clone(), n.clone()), e.clone(), *depth));
        }
    }
    // Pair each arrival with a departure of the same id: a rename.
    let mut renames: Vec<(Link, Link, Entry)> = Vec::new();
    for (to, e, _) in came {
        if let Some(from) = gone.get_mut(&e.id).and_then(Vec::pop) {
            renames.push((from, to, e));
        }
    }
    let sources: HashSet<Link> = renames.iter().map(|(f, _, _)| f.clone()).collect();
    // 1. Renames, as their destinations free up.
    let mut pending = renames;
    let mut done_sources: HashSet<Link> = HashSet::new();
    loop {
        let mut progress = false;
        let mut i = 0;
        while i < pending.len() {
            let (from, to, e) = &pending[i];
            if let Some(c) = try_rename(&w, from, to, e, &sources, &done_sources, &pending) {
                let exchanged = matches!(
                    &c,
                    Change::Rename {
                        exchanged: Some(_),
                        ..
                    }
                );
                let _ = c.apply(&mut w);
                out.push(c);
                done_sources.insert(from.clone());
                let (from, to) = (from.clone(), to.clone());
                pending.swap_remove(i);
                if exchanged {
                    // Its mirror is done too.
                    if let Some(j) = pending.iter().position(|(f, t, _)| *f == to && *t == from) {
                        done_sources.insert(to.clone());
                        pending.swap_remove(j);
                    }
                }
                progress = true;
            } else {
                i += 1;
            }
        }
        if !progress {
            break;
        }
    }
    // 2. Removals: whatever of `w` is not in `new` (a rename that could
    // not be ordered included), deepest first.
    let mut left: Vec<(Link, usize)> = Vec::new();
    for (p, n, e, depth) in links(&w) {
        if !same(new, &p, &n, &e) {
            left.push(((p, n), depth));
        }
    }
    left.sort_by_key(|l| std::cmp::Reverse(l.1));
    for ((p, n), _) in left {
        remove_bottom_up(&mut w, &p, &n, &mut out);
    }
    // 3. Creations: whatever of `new` is not in `w`, parents first (a
    // directory created here is empty, so its contents follow it, all of
    // them: in a scoped comparison a directory whose entries did not
    // change is out of scope, yet its removal above, as part of one that
    // went or as a rename that could not be ordered, took them).
    let mut queue: std::collections::VecDeque<TopDown> = new_links.into();
    while let Some((p, n, e, depth)) = queue.pop_front() {
        // A parent gone from `w` comes back with its contents, this one
        // among them.
        if same(&w, &p, &n, &e) || !w.has_dir(&p) {
            continue;
        }
        if e.kind.is_dir() {
            let mut below: Vec<TopDown> = new
                .entries_of(&e.id)
                .map(|(cn, ce)| (e.id.clone(), Box::from(cn), ce, depth + 1))
                .collect();
            below.sort_by(|a, b| a.1.cmp(&b.1));
            queue.extend(below);
        }
        if w.lookup(&p, &n).is_some() {
            remove_bottom_up(&mut w, &p, &n, &mut out);
        }
        let link = !e.kind.is_dir() && w.links(&e.id) > 0;
        let c = Change::Create {
            parent: p,
            name: n.into_vec(),
            entry: e,
            link,
        };
        let _ = c.apply(&mut w);
        out.push(c);
    }
    out
}

/// The rename `from` → `to` of `e` if it applies to `w` now.
fn try_rename(
    w: &Tree,
    from: &Link,
    to: &Link,
    e: &Entry,
    sources: &HashSet<Link>,
    done: &HashSet<Link>,
    pending: &[(Link, Link, Entry)],
) -> Option<Change> {
    if w.lookup(&from.0, &from.1).is_none_or(|x| x.id != e.id) || !w.has_dir(&to.0) {
        return None;
    }
    if e.kind.is_dir() && w.is_ancestor(&e.id, &to.0) {
        return None;
    }
    let rename = |overwritten, exchanged| Change::Rename {
        sparent: from.0.clone(),
        sname: from.1.to_vec(),
        parent: to.0.clone(),
        name: to.1.to_vec(),
        entry: e.clone(),
        overwritten,
        exchanged,
    };
    match w.lookup(&to.0, &to.1) {
        None => Some(rename(None, None)),
        Some(there) => {
            // The entry there is itself to move: to exactly our source (a
            // swap), or elsewhere first.
            if sources.contains(to) && !done.contains(to) {
                let mirror = pending
                    .iter()
                    .any(|(f, t, x)| f == to && t == from && x.id == there.id);
                if mirror && !(there.kind.is_dir() && w.is_ancestor(&there.id, &from.0)) {
                    return Some(rename(None, Some(there.clone())));
                }
                return None;
            }
            let last = there.kind.is_dir() || w.links(&there.id) <= 1;
            Some(rename(Some((there.clone(), last)), None))
        }
    }
}

/// Removes entry `n` of `p` from `w`, a directory's contents first, and
/// logs each removal.
fn remove_bottom_up(w: &mut Tree, p: &ObjectId, n: &[u8], out: &mut Vec<Change>) {
    let Some(e) = w.lookup(p, n) else {
        return;
    };
    if e.kind.is_dir() {
        let names: Vec<Box<[u8]>> = w.entries_of(&e.id).map(|(n, _)| Box::from(n)).collect();
        for child in names {
            remove_bottom_up(w, &e.id, &child, out);
        }
    }
    let last = e.kind.is_dir() || w.links(&e.id) <= 1;
    let c = Change::Remove {
        parent: p.clone(),
        name: n.to_vec(),
        entry: e,
        last,
    };
    let _ = c.apply(w);
    out.push(c);
}

#[cfg(test)]
mod tests;
