//! A watched tree as the log describes it: the records replayed over the
//! root's last `fs root watched` MARK. A consumer's view, and the
//! tracker's own at a start after an earlier watch of the same root (whose
//! comparison with a walk logs what changed while nothing watched).
//!
//! A replay needs a starting point described whole: the last `fs root
//! watched` MARK of the root, when the root was empty then (`entries=0`),
//! or the tracker's persistent copy of the tree as of some record
//! ([`tail`]). A root that held entries when it was first watched was
//! never described entry by entry in the log, so only the copy can start
//! its replay.

use std::path::Path;

use weir_log::{Log, Reader, RecordType};

use crate::id::ObjectId;
use crate::record::{self, decode};
use crate::tree::Tree;

/// The MARK that starts a root's watch.
pub const WATCHED: &[u8] = b"fs root watched";
/// The MARK that says again that a root is watched, written as the log
/// grows, so that retention never leaves a since query without its root.
pub const WATCHING: &[u8] = b"fs root watching";
/// The MARK that ends a restart's comparison.
pub const RECONCILED: &[u8] = b"fs tree reconciled";
/// The MARK that ends a root's watch: its directory was removed.
pub const REMOVED: &[u8] = b"fs root removed";
/// The MARK that ends a root's watch: its directory was moved away.
pub const MOVED: &[u8] = b"fs root moved";

/// A replayed tree, with where it starts and how many records made it.
#[derive(Debug)]
#[non_exhaustive]
pub struct View {
    /// The tree.
    pub tree: Tree,
    /// The index of the MARK it starts from.
    pub since: u64,
    /// Records applied.
    pub replayed: u64,
}

impl View {
    /// A view that starts from `tree`, the tree as of record `since`.
    pub fn start(tree: Tree, since: u64) -> View {
        View {
            tree,
            since,
            replayed: 0,
        }
    }
}

/// The tree of root `path` as `log` describes it, or `None` when the log
/// has no whole description of it. With `root`, only a MARK with that id
/// starts a view (the root directory may have been replaced since).
pub fn view(log: &Log, path: &Path, root: Option<&ObjectId>) -> weir_log::Result<Option<View>> {
    view_from(log.reader(log.first_index()), path, root)
}

/// As [`view`], as of record `until`: the records after it left out.
pub fn view_until(
    log: &Log,
    path: &Path,
    root: Option<&ObjectId>,
    until: u64,
) -> weir_log::Result<Option<View>> {
    replay(log.reader(log.first_index()), path, root, None, until)
}

/// As [`view`], from the records `reader` gives.
pub fn view_from(
    reader: Reader,
    path: &Path,
    root: Option<&ObjectId>,
) -> weir_log::Result<Option<View>> {
    replay(reader, path, root, None, u64::MAX)
}

/// `start` (the tree of root `path` as of record `start.since`, from a
/// persistent copy) with the records `reader` gives after it applied: the
/// tree as the log describes it now. `None` when those records end the
/// root's watch, or start it again over a root that held entries.
pub fn tail(
    reader: Reader,
    path: &Path,
    root: Option<&ObjectId>,
    start: View,
) -> weir_log::Result<Option<View>> {
    replay(reader, path, root, Some(start), u64::MAX)
}

fn replay(
    reader: Reader,
    path: &Path,
    root: Option<&ObjectId>,
    start: Option<View>,
    until: u64,
) -> weir_log::Result<Option<View>> {
    let path = path.as_os_str().as_encoded_bytes();
    let mut reader = reader.with_mask(record::mask());
    let mut view = start;
    while let Some(r) = reader.next_record()? {
        if r.index > until {
            break;
        }
        if r.kind == RecordType::MARK {
            let this_root = r.field("source") == Some(b"fs") && r.field("root") == Some(path);
            if this_root && (r.name == REMOVED || r.name == MOVED) {
                // What the path holds now was never described.
                view = None;
            } else if this_root && r.name == WATCHED {
                let id =
                    ObjectId::from_bytes(&r.target).filter(|id| root.is_none_or(|want| want == id));
                view = id
                    .filter(|_| r.field("entries") == Some(b"0"))
                    .map(|id| View {
                        tree: Tree::new(id),
                        since: r.index,
                        replayed: 0,
                    });
            }
            continue;
        }
        if let Some(v) = view.as_mut()
            && let Some(c) = decode::change(&r.view())
            && c.apply(&mut v.tree).is_ok()
        {
            v.replayed += 1;
        }
    }
    Ok(view)
}
