//! Changes as changelog records, with Lustre's type names: CREAT, MKDIR,
//! MKNOD, SLINK, HLINK, UNLNK, RMDIR, RENME, SATTR, MTIME, and the MARKs
//! of a watch. The layout is documented in docs/records.md.
//!
//! - target: the object's id ([`ObjectId`]); parent: its directory's id.
//! - name: the entry's name, raw bytes.
//! - fields: `path` (relative to the watched root, raw bytes), and per
//!   type the rest; ids inside fields are lowercase hex.
//!
//! [`decode`] reads them back, for a replay.

pub mod decode;

use weir_log::{FLAG_RECONCILED, Field, Record, RecordType, TypeMask};

use crate::change::{Change, How};
use crate::kind::Kind;

/// Record flag: found by comparing the whole tree with a walk, not from an
/// event about this entry.
pub const FLAG_COMPARE: u16 = 1 << 0;
/// Record flag: the kernel's event was ambiguous (merged with others, or
/// at odds with the records before it); the entry's live state, read
/// through its directory's handle, decided.
pub const FLAG_VERIFIED: u16 = 1 << 1;
/// Record flag (RENME): a `RENAME_EXCHANGE`: the two entries swapped, and
/// `exchanged` names the one that moved the other way.
pub const FLAG_EXCHANGE: u16 = 1 << 2;
/// Record flag (RENME): the entry left the watched tree; `parent` is a
/// directory outside it. For the tree, a removal.
pub const FLAG_OUT: u16 = 1 << 3;
/// Record flag (RENME): the entry came into the watched tree from
/// outside; `sparent` is a directory outside it. A directory's contents
/// follow as CREAT/MKDIR/... records flagged `COMPARE`.
pub const FLAG_IN: u16 = 1 << 4;
/// Record flag (UNLNK, RMDIR): the object's last name in the watched tree.
pub const FLAG_LAST: u16 = 1 << 5;

/// The names of this source's flags, as `weir log tail` shows them.
pub const FLAG_NAMES: [(u16, &str); 6] = [
    (FLAG_COMPARE, "COMPARE"),
    (FLAG_VERIFIED, "VERIFIED"),
    (FLAG_EXCHANGE, "EXCHANGE"),
    (FLAG_OUT, "OUT"),
    (FLAG_IN, "IN"),
    (FLAG_LAST, "LAST"),
];

/// The record types of changes to a tree.
pub const TYPES: [RecordType; 10] = [
    RecordType::CREAT,
    RecordType::MKDIR,
    RecordType::MKNOD,
    RecordType::SLINK,
    RecordType::HLINK,
    RecordType::UNLNK,
    RecordType::RMDIR,
    RecordType::RENME,
    RecordType::SATTR,
    RecordType::MTIME,
];

/// A mask of [`TYPES`] and MARK, for readers of this source's records.
pub fn mask() -> TypeMask {
    let mut m = TypeMask::none();
    for t in TYPES {
        m.insert(t);
    }
    m.insert(RecordType::MARK);
    m
}

/// The flags of `how`.
pub fn how_flags(how: How) -> u16 {
    match how {
        How::Event => 0,
        How::Verified => FLAG_VERIFIED,
        How::Compare => FLAG_COMPARE,
        How::Reconciled => FLAG_COMPARE | FLAG_RECONCILED,
    }
}

/// The record type of a change.
pub fn record_type(c: &Change) -> RecordType {
    match c {
        Change::Create { entry, link, .. } => match entry.kind {
            _ if *link => RecordType::HLINK,
            Kind::Dir => RecordType::MKDIR,
            Kind::Symlink => RecordType::SLINK,
            Kind::Fifo | Kind::Socket | Kind::Char | Kind::Block => RecordType::MKNOD,
            Kind::File | Kind::Unknown => RecordType::CREAT,
        },
        Change::Remove { entry, .. } if entry.kind.is_dir() => RecordType::RMDIR,
        Change::Remove { .. } => RecordType::UNLNK,
        Change::Rename { .. } | Change::MoveOut { .. } | Change::MoveIn { .. } => RecordType::RENME,
        Change::Attr { .. } => RecordType::SATTR,
        Change::Modify { .. } => RecordType::MTIME,
    }
}

/// The paths a record carries, resolved by the caller from its tree:
/// `path` (the entry's, after the change; before it for a removal) and,
/// for a rename, `spath` (before it). Empty when not resolvable.
#[derive(Debug, Default)]
pub struct Paths {
    /// The entry's path.
    pub path: Vec<u8>,
    /// A rename's old path.
    pub spath: Vec<u8>,
}

/// Builds the record of `c` and hands it to `f` (which appends it): the
/// record borrows its parts from locals here, so nothing outlives the call.
pub fn with_record<R>(c: &Change, how: How, paths: &Paths, f: impl FnOnce(&Record<'_>) -> R) -> R {
    let mut flags = how_flags(how);
    let kind = record_type(c);
    // The hex forms of the ids a rename's fields hold, made before the
    // fields borrow them.
    let (hex_a, hex_b) = match c {
        Change::Rename {
            sparent,
            overwritten,
            exchanged,
            ..
        } => (
            sparent.hex(),
            exchanged
                .as_ref()
                .map(|x| x.id.hex())
                .or_else(|| overwritten.as_ref().map(|(o, _)| o.id.hex()))
                .unwrap_or_default(),
        ),
        Change::MoveOut { sparent, .. } | Change::MoveIn { sparent, .. } => {
            (sparent.hex(), String::new())
        }
        _ => (String::new(), String::new()),
    };
    let mut fields = FieldBuf::default();
    // `path` first: the field a reader looks for most. An entry moved out
    // of the tree has no path in it.
    if !matches!(c, Change::MoveOut { .. }) {
        fields.push(Field {
            key: "path",
            value: &paths.path,
        });
    }
    let (target, parent, name): (&[u8], &[u8], &[u8]) = match c {
        Change::Create {
            parent,
            name,
            entry,
            ..
        } => {
            // The type, where the record's type does not say it: nodes,
            // a CREAT of an object gone before weir saw it, and a hard
            // link of anything but a regular file.
            let implied = match kind {
                RecordType::MKDIR | RecordType::SLINK => true,
                RecordType::CREAT | RecordType::HLINK => entry.kind == Kind::File,
                _ => false,
            };
            if !implied {
                fields.push(Field {
                    key: "type",
                    value: entry.kind.name().as_bytes(),
                });
            }
            (entry.id.as_bytes(), parent.as_bytes(), name)
        }
        Change::Remove {
            parent,
            name,
            entry,
            last,
        } => {
            if *last {
                flags |= FLAG_LAST;
            }
            (entry.id.as_bytes(), parent.as_bytes(), name)
        }
        Change::Rename {
            sname,
            parent,
            name,
            entry,
            overwritten,
            exchanged,
            ..
        } => {
            if exchanged.is_some() {
                flags |= FLAG_EXCHANGE;
            }
            fields.source(&hex_a, sname, &paths.spath);
            if entry.kind.is_dir() {
                fields.push(Field {
                    key: "type",
                    value: b"dir",
                });
            }
            match (overwritten, exchanged) {
                (Some((_, last)), None) => {
                    fields.push(Field {
                        key: "overwritten",
                        value: hex_b.as_bytes(),
                    });
                    fields.push(Field {
                        key: "overwritten_last",
                        value: if *last { b"1" } else { b"0" },
                    });
                }
                (_, Some(_)) => fields.push(Field {
                    key: "exchanged",
                    value: hex_b.as_bytes(),
                }),
                (None, None) => {}
            }
            (entry.id.as_bytes(), parent.as_bytes(), name)
        }
        Change::MoveOut {
            sname,
            parent,
            name,
            entry,
            ..
        }
        | Change::MoveIn {
            sname,
            parent,
            name,
            entry,
            ..
        } => {
            flags |= if matches!(c, Change::MoveOut { .. }) {
                FLAG_OUT
            } else {
                FLAG_IN
            };
            fields.source(&hex_a, sname, &paths.spath);
            fields.push(Field {
                key: "type",
                value: entry.kind.name().as_bytes(),
            });
            (entry.id.as_bytes(), parent.as_bytes(), name)
        }
        Change::Attr { parent, name, id } | Change::Modify { parent, name, id } => {
            (id.as_bytes(), parent.as_bytes(), name)
        }
    };
    let r = Record::new(kind)
        .flags(flags)
        .target(target)
        .parent(parent)
        .name(name)
        .fields(fields.as_slice());
    f(&r)
}

/// The most fields a record of this source has.
const MAX_FIELDS: usize = 8;

/// A record's fields, on the stack: a record is built per event.
struct FieldBuf<'a> {
    fields: [Field<'a>; MAX_FIELDS],
    len: usize,
}

impl Default for FieldBuf<'_> {
    fn default() -> Self {
        FieldBuf {
            fields: [Field {
                key: "",
                value: &[],
            }; MAX_FIELDS],
            len: 0,
        }
    }
}

impl<'a> FieldBuf<'a> {
    fn push(&mut self, f: Field<'a>) {
        // Every layout above has at most MAX_FIELDS; more is a bug the
        // tests catch, not a record to cut silently.
        debug_assert!(self.len < MAX_FIELDS);
        if let Some(slot) = self.fields.get_mut(self.len) {
            *slot = f;
            self.len += 1;
        }
    }

    /// A move's old place: `sparent` (hex), `sname`, and `spath` when
    /// known.
    fn source(&mut self, sparent: &'a str, sname: &'a [u8], spath: &'a [u8]) {
        self.push(Field {
            key: "sparent",
            value: sparent.as_bytes(),
        });
        self.push(Field {
            key: "sname",
            value: sname,
        });
        if !spath.is_empty() {
            self.push(Field {
                key: "spath",
                value: spath,
            });
        }
    }

    fn as_slice(&self) -> &[Field<'a>] {
        &self.fields[..self.len]
    }
}

#[cfg(test)]
mod tests;
