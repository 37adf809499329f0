//! The line `weir fs watch` prints per change of a watched tree: the
//! record's type, the path relative to the root, and what else the change
//! says, with the flags that tell how it was found.
//!
//! ```text
//! CREAT docs/a.txt
//! MKNOD docs/fifo fifo
//! RENME docs/a.txt -> docs/b.txt (overwritten, last)
//! RENME docs/x <-> docs/y [EXCHANGE]
//! UNLNK docs/b.txt [LAST]
//! MKDIR new [COMPARE]
//! ```
//!
//! Paths use the log's text escaping ([`escape`]), so a line stays one
//! line and shows every byte, as in `weir log tail`.

use std::fmt::Write as _;

use weir_fs::record::{FLAG_NAMES, Paths, how_flags, record_type};
use weir_fs::{Change, How};

use crate::bytes::escape;

/// One change as a line, without the newline.
pub fn change_line(c: &Change, how: How, paths: &Paths) -> String {
    let kind = record_type(c);
    let mut s = format!("{} {}", kind, escape(&paths.path));
    let mut flags = how_flags(how);
    match c {
        Change::Create { entry, .. }
            if kind == weir_log::RecordType::MKNOD
                || !matches!(
                    entry.kind,
                    weir_fs::Kind::File | weir_fs::Kind::Dir | weir_fs::Kind::Symlink
                ) =>
        {
            let _ = write!(s, " {}", entry.kind);
        }
        Change::Remove { last, .. } if *last => flags |= weir_fs::record::FLAG_LAST,
        Change::Rename {
            overwritten,
            exchanged,
            ..
        } => {
            let arrow = if exchanged.is_some() { "<->" } else { "->" };
            s = format!(
                "{} {} {arrow} {}",
                kind,
                escape(&paths.spath),
                escape(&paths.path)
            );
            if exchanged.is_some() {
                flags |= weir_fs::record::FLAG_EXCHANGE;
            }
            if let Some((_, last)) = overwritten {
                s.push_str(if *last {
                    " (overwritten, last)"
                } else {
                    " (overwritten)"
                });
            }
        }
        Change::MoveOut { .. } => {
            s = format!("{} {} -> (out of the tree)", kind, escape(&paths.spath));
            flags |= weir_fs::record::FLAG_OUT;
        }
        Change::MoveIn { .. } => {
            s = format!("{} (into the tree) -> {}", kind, escape(&paths.path));
            flags |= weir_fs::record::FLAG_IN;
        }
        _ => {}
    }
    let names: Vec<&str> = FLAG_NAMES
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, n)| *n)
        .chain((flags & weir_log::FLAG_RECONCILED != 0).then_some("RECONCILED"))
        .collect();
    if !names.is_empty() {
        let _ = write!(s, " [{}]", names.join(","));
    }
    s
}

#[cfg(test)]
mod tests {
    use weir_fs::{Entry, Kind, ObjectId};

    use super::*;

    fn oid(n: u8) -> ObjectId {
        ObjectId::from_bytes(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, n]).unwrap()
    }

    fn paths(path: &[u8], spath: &[u8]) -> Paths {
        Paths {
            path: path.to_vec(),
            spath: spath.to_vec(),
        }
    }

    #[test]
    fn lines_name_the_type_the_paths_and_the_flags() {
        let create = Change::Create {
            parent: oid(0),
            name: b"a\n".to_vec(),
            entry: Entry {
                id: oid(1),
                kind: Kind::File,
            },
            link: false,
        };
        assert_eq!(
            change_line(&create, How::Event, &paths(b"d/a\n", b"")),
            r"CREAT d/a\x0a"
        );
        let fifo = Change::Create {
            parent: oid(0),
            name: b"f".to_vec(),
            entry: Entry {
                id: oid(2),
                kind: Kind::Fifo,
            },
            link: false,
        };
        assert_eq!(
            change_line(&fifo, How::Compare, &paths(b"f", b"")),
            "MKNOD f fifo [COMPARE]"
        );
        let rename = Change::Rename {
            sparent: oid(0),
            sname: b"a".to_vec(),
            parent: oid(0),
            name: b"b".to_vec(),
            entry: Entry {
                id: oid(1),
                kind: Kind::File,
            },
            overwritten: Some((
                Entry {
                    id: oid(3),
                    kind: Kind::File,
                },
                true,
            )),
            exchanged: None,
        };
        assert_eq!(
            change_line(&rename, How::Verified, &paths(b"b", b"a")),
            "RENME a -> b (overwritten, last) [VERIFIED]"
        );
        let gone = Change::Remove {
            parent: oid(0),
            name: b"b".to_vec(),
            entry: Entry {
                id: oid(1),
                kind: Kind::File,
            },
            last: true,
        };
        assert_eq!(
            change_line(&gone, How::Reconciled, &paths(b"b", b"")),
            "UNLNK b [COMPARE,LAST,RECONCILED]"
        );
    }
}
