//! Records back into changes, for a replay: a consumer's view of a tree,
//! or the tracker's own at a restart. Records come from a log that may be
//! damaged or foreign, so anything that does not decode is `None`, never a
//! panic.

use weir_log::{RecordRef, RecordType};

use super::{FLAG_EXCHANGE, FLAG_IN, FLAG_LAST, FLAG_OUT};
use crate::change::Change;
use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tree::Entry;

/// Whether `name` can name a directory entry: 1 to 255 bytes, none of
/// them `/` or NUL, and not `.` or `..`.
pub fn entry_name(name: &[u8]) -> bool {
    (1..=255).contains(&name.len())
        && !name.iter().any(|&b| b == b'/' || b == 0)
        && name != b"."
        && name != b".."
}

/// The change a CREAT ... MTIME record describes; `None` for another type
/// or a record that does not have this source's layout (an entry's name
/// that no directory could hold included). A [`weir_log::LogRecord`] is
/// asked through its [`weir_log::LogRecord::view`].
pub fn change(r: &RecordRef<'_>) -> Option<Change> {
    let id = ObjectId::from_bytes(r.target)?;
    let parent = ObjectId::from_bytes(r.parent)?;
    let name = r.name.to_vec();
    // Only a root's own SATTR or MTIME names no entry.
    if !matches!(r.kind, RecordType::SATTR | RecordType::MTIME) && !entry_name(&name) {
        return None;
    }
    let typed = |default: Kind| match r.field("type") {
        Some(t) => Kind::from_name(t),
        None => Some(default),
    };
    let hex = |key: &str| r.field(key).and_then(ObjectId::from_hex);
    Some(match r.kind {
        RecordType::CREAT
        | RecordType::MKDIR
        | RecordType::SLINK
        | RecordType::MKNOD
        | RecordType::HLINK => {
            let kind = match r.kind {
                RecordType::MKDIR => Kind::Dir,
                RecordType::SLINK => Kind::Symlink,
                RecordType::MKNOD => typed(Kind::Unknown)?,
                _ => typed(Kind::File)?,
            };
            Change::Create {
                parent,
                name,
                entry: Entry { id, kind },
                link: r.kind == RecordType::HLINK,
            }
        }
        RecordType::UNLNK | RecordType::RMDIR => Change::Remove {
            parent,
            name,
            entry: Entry {
                id,
                kind: if r.kind == RecordType::RMDIR {
                    Kind::Dir
                } else {
                    Kind::File
                },
            },
            last: r.flags & FLAG_LAST != 0,
        },
        RecordType::RENME => {
            let sparent = hex("sparent")?;
            let sname = r.field("sname").filter(|n| entry_name(n))?.to_vec();
            let kind = typed(Kind::File)?;
            let entry = Entry { id, kind };
            if r.flags & FLAG_OUT != 0 {
                Change::MoveOut {
                    sparent,
                    sname,
                    parent,
                    name,
                    entry,
                }
            } else if r.flags & FLAG_IN != 0 {
                Change::MoveIn {
                    sparent,
                    sname,
                    parent,
                    name,
                    entry,
                }
            } else {
                let exchanged = if r.flags & FLAG_EXCHANGE != 0 {
                    Some(Entry {
                        id: hex("exchanged")?,
                        kind: Kind::Unknown,
                    })
                } else {
                    None
                };
                let overwritten = hex("overwritten").map(|o| {
                    (
                        Entry {
                            id: o,
                            kind: Kind::Unknown,
                        },
                        r.field("overwritten_last") == Some(b"1"),
                    )
                });
                Change::Rename {
                    sparent,
                    sname,
                    parent,
                    name,
                    entry,
                    overwritten,
                    exchanged,
                }
            }
        }
        RecordType::SATTR => Change::Attr { parent, name, id },
        RecordType::MTIME => Change::Modify { parent, name, id },
        _ => return None,
    })
}
