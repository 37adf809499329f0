//! An independent oracle: a plain recursive walk of a directory tree with
//! rustix (`openat` + `Dir`, `statx` without following symlinks), giving
//! each entry's type, inode, device and link count by relative path.
//!
//! The tests compare weir-fs's replay of its journal against this, so it
//! uses nothing from weir-fs and is kept as simple as a walk can be: it
//! never follows a symlink, never crosses into another filesystem (an
//! entry whose device or mount differs from the root's is left out,
//! contents and all), and skips the tracker's `.weir-cookie*` files.

use std::collections::BTreeMap;
use std::fmt;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;

use super::names::COOKIE_PREFIX;

/// An entry's file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    Char,
    /// A block device.
    Block,
}

impl Kind {
    /// The kind of `mode`'s file type.
    pub(crate) fn from_mode(mode: u32) -> Kind {
        match FileType::from_raw_mode(mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            FileType::CharacterDevice => Kind::Char,
            FileType::BlockDevice => Kind::Block,
            FileType::Unknown => panic!("statx reported an unknown file type (mode {mode:o})"),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Fifo => "fifo",
            Kind::Socket => "socket",
            Kind::Char => "char",
            Kind::Block => "block",
        })
    }
}

/// One entry as `statx` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Node {
    /// Its file type.
    pub(crate) kind: Kind,
    /// Its inode number.
    pub(crate) ino: u64,
    /// Its device (`st_dev`; on btrfs the subvolume's anonymous device).
    pub(crate) dev: u64,
    /// Its link count.
    pub(crate) nlink: u64,
}

/// A tree: entries by path relative to the root, components joined by
/// `/`, as raw bytes (names need not be UTF-8). The root itself is not an
/// entry, so an empty directory is an empty map.
pub(crate) type Tree = BTreeMap<Vec<u8>, Node>;

/// Walks `root` (not following symlinks, not leaving its filesystem,
/// skipping `.weir-cookie*`) and returns every entry under it.
///
/// Meant for a quiescent tree; an entry that vanishes between being listed
/// and being looked at is left out rather than failing the walk. Any other
/// error panics.
pub(crate) fn snapshot(root: &Path) -> Tree {
    let root_fd = rustix::fs::openat(
        CWD,
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap_or_else(|e| panic!("open {}: {e}", root.display()));
    let top = rustix::fs::statx(
        &root_fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE | StatxFlags::INO | StatxFlags::MNT_ID,
    )
    .unwrap_or_else(|e| panic!("statx {}: {e}", root.display()));
    let root_dev = dev(&top);
    let root_mnt = mnt_id(&top);

    let mut tree = Tree::new();
    // Directories still to list: an open descriptor and the path to it.
    let mut todo: Vec<(OwnedFd, Vec<u8>)> = vec![(root_fd, Vec::new())];
    while let Some((dir_fd, prefix)) = todo.pop() {
        let shown = |name: &[u8]| show(&join(&prefix, name));
        let dir = Dir::read_from(&dir_fd)
            .unwrap_or_else(|e| panic!("list {}/{}: {e}", root.display(), show(&prefix)));
        for entry in dir {
            let entry =
                entry.unwrap_or_else(|e| panic!("list {}/{}: {e}", root.display(), show(&prefix)));
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." || name.starts_with(COOKIE_PREFIX) {
                continue;
            }
            let st = match rustix::fs::statx(
                &dir_fd,
                name,
                AtFlags::SYMLINK_NOFOLLOW | AtFlags::NO_AUTOMOUNT,
                StatxFlags::TYPE | StatxFlags::INO | StatxFlags::NLINK | StatxFlags::MNT_ID,
            ) {
                Ok(st) => st,
                Err(Errno::NOENT) => continue,
                Err(e) => panic!("statx {}: {e}", shown(name)),
            };
            // statx crosses into what is mounted on the name: that is
            // another filesystem's inode, and not part of this tree.
            if dev(&st) != root_dev || mnt_id(&st).zip(root_mnt).is_some_and(|(a, b)| a != b) {
                continue;
            }
            let kind = Kind::from_mode(u32::from(st.stx_mode));
            let path = join(&prefix, name);
            if kind == Kind::Dir {
                match rustix::fs::openat(
                    &dir_fd,
                    name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    Ok(fd) => todo.push((fd, path.clone())),
                    Err(Errno::NOENT) => continue,
                    Err(e) => panic!("open {}: {e}", shown(name)),
                }
            }
            tree.insert(
                path,
                Node {
                    kind,
                    ino: st.stx_ino,
                    dev: dev(&st),
                    nlink: u64::from(st.stx_nlink),
                },
            );
        }
    }
    tree
}

fn dev(st: &rustix::fs::Statx) -> u64 {
    rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor)
}

/// The mount id, when the kernel filled it in.
fn mnt_id(st: &rustix::fs::Statx) -> Option<u64> {
    (st.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id)
}

/// `prefix/name`, or `name` at the root.
pub(crate) fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    if prefix.is_empty() {
        name.to_vec()
    } else {
        [prefix, b"/".as_slice(), name].concat()
    }
}

/// The last component of a relative path.
pub(crate) fn file_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// A path's bytes for messages: printable ASCII as is, anything else
/// (newlines, invalid UTF-8) escaped, so that assertion output stays on
/// one line and shows exactly which bytes differ.
pub(crate) fn show(path: &[u8]) -> String {
    path.escape_ascii().to_string()
}

/// The non-directories whose link count differs from the number of paths
/// they appear under, as messages. Empty when every link of every file is
/// inside the tree (as in a tree only the workload wrote).
pub(crate) fn hard_link_problems(tree: &Tree) -> Vec<String> {
    let mut paths: BTreeMap<(u64, u64), Vec<&[u8]>> = BTreeMap::new();
    for (path, node) in tree {
        if node.kind != Kind::Dir {
            paths
                .entry((node.dev, node.ino))
                .or_default()
                .push(path.as_slice());
        }
    }
    let mut problems = Vec::new();
    for ((_, ino), ps) in &paths {
        let nlink = tree[ps[0]].nlink;
        if nlink != ps.len() as u64 {
            let shown: Vec<String> = ps.iter().map(|p| show(p)).collect();
            problems.push(format!(
                "inode {ino}: nlink {nlink}, but {} paths: {}",
                ps.len(),
                shown.join(", ")
            ));
        }
    }
    problems
}

/// The differences between two trees, as messages (empty when they are
/// equal): entries only in `expected`, only in `actual`, or in both with
/// different nodes.
pub(crate) fn diff(expected: &Tree, actual: &Tree) -> Vec<String> {
    let mut out = Vec::new();
    for (path, e) in expected {
        match actual.get(path) {
            None => out.push(format!("missing {}: {e:?}", show(path))),
            Some(a) if a != e => {
                out.push(format!("differs {}: expected {e:?}, got {a:?}", show(path)))
            }
            Some(_) => {}
        }
    }
    for (path, a) in actual {
        if !expected.contains_key(path) {
            out.push(format!("unexpected {}: {a:?}", show(path)));
        }
    }
    out
}
