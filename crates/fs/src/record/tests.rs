//! The record layout: every change encodes and decodes back to itself (as
//! far as a record carries it), and records of any content decode to a
//! change or to nothing, never a panic, and apply to a tree without
//! breaking it.

use proptest::prelude::*;
use weir_log::{LogRecord, RecordType};
use weir_sys::fanotify::fid::FileHandle;

use super::*;
use crate::change::Change;
use crate::id::ObjectId;
use crate::kind::Kind;
use crate::tree::{Entry, Tree};

fn oid(n: u8) -> ObjectId {
    ObjectId::from_handle([3, 4], &FileHandle::new(0x4d, &[n; 20]).unwrap())
}

/// The record of `c` as the log gives it back.
fn logged(c: &Change, how: How, paths: &Paths) -> LogRecord {
    with_record(c, how, paths, |r| LogRecord {
        index: 1,
        time_ns: 2,
        kind: r.kind,
        flags: r.flags,
        target: r.target.to_vec(),
        parent: r.parent.to_vec(),
        name: r.name.to_vec(),
        fields: r
            .fields
            .iter()
            .map(|f| (f.key.to_owned(), f.value.to_vec()))
            .collect(),
    })
}

fn kinds() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::File),
        Just(Kind::Dir),
        Just(Kind::Symlink),
        Just(Kind::Fifo),
        Just(Kind::Socket),
        Just(Kind::Char),
        Just(Kind::Block),
        Just(Kind::Unknown),
    ]
}

fn names() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        any::<u8>().prop_filter("no / or NUL", |b| *b != b'/' && *b != 0),
        1..=255,
    )
    .prop_filter("not . or ..", |n| n != b"." && n != b"..")
}

fn changes() -> impl Strategy<Value = Change> {
    fn e() -> impl Strategy<Value = Entry> {
        (any::<u8>(), kinds()).prop_map(|(n, kind)| Entry { id: oid(n), kind })
    }
    prop_oneof![
        (any::<u8>(), names(), e(), any::<bool>()).prop_map(|(p, name, entry, link)| {
            Change::Create {
                parent: oid(p),
                name,
                link: link && !entry.kind.is_dir(),
                entry,
            }
        }),
        (any::<u8>(), names(), e(), any::<bool>()).prop_map(|(p, name, entry, last)| {
            Change::Remove {
                parent: oid(p),
                name,
                entry,
                last,
            }
        }),
        (
            any::<u8>(),
            names(),
            any::<u8>(),
            names(),
            e(),
            proptest::option::of((e(), any::<bool>())),
            any::<bool>()
        )
            .prop_map(|(sp, sname, p, name, entry, over, exchange)| {
                let (overwritten, exchanged) = match over {
                    Some((x, _)) if exchange => (None, Some(x)),
                    o => (o, None),
                };
                Change::Rename {
                    sparent: oid(sp),
                    sname,
                    parent: oid(p),
                    name,
                    entry,
                    overwritten,
                    exchanged,
                }
            }),
        (any::<u8>(), names(), any::<u8>(), names(), e()).prop_map(
            |(sp, sname, p, name, entry)| Change::MoveOut {
                sparent: oid(sp),
                sname,
                parent: oid(p),
                name,
                entry
            }
        ),
        (any::<u8>(), names(), any::<u8>(), names(), e()).prop_map(
            |(sp, sname, p, name, entry)| Change::MoveIn {
                sparent: oid(sp),
                sname,
                parent: oid(p),
                name,
                entry
            }
        ),
        (any::<u8>(), names(), any::<u8>()).prop_map(|(p, name, id)| Change::Attr {
            parent: oid(p),
            name,
            id: oid(id)
        }),
        (any::<u8>(), names(), any::<u8>()).prop_map(|(p, name, id)| Change::Modify {
            parent: oid(p),
            name,
            id: oid(id)
        }),
    ]
}

/// What a record keeps of a change: the kinds of entries other than the
/// one created or moved in, and of removed or renamed entries other than
/// directories, are not written.
fn as_recorded(c: &Change) -> Change {
    let strip = |e: &Entry| Entry {
        id: e.id.clone(),
        kind: Kind::Unknown,
    };
    match c.clone() {
        Change::Remove {
            parent,
            name,
            entry,
            last,
        } => Change::Remove {
            parent,
            name,
            entry: Entry {
                id: entry.id,
                kind: if entry.kind.is_dir() {
                    Kind::Dir
                } else {
                    Kind::File
                },
            },
            last,
        },
        Change::Rename {
            sparent,
            sname,
            parent,
            name,
            entry,
            overwritten,
            exchanged,
        } => Change::Rename {
            sparent,
            sname,
            parent,
            name,
            entry: Entry {
                id: entry.id,
                kind: if entry.kind.is_dir() {
                    Kind::Dir
                } else {
                    Kind::File
                },
            },
            overwritten: overwritten.map(|(o, l)| (strip(&o), l)),
            exchanged: exchanged.map(|x| strip(&x)),
        },
        Change::Create {
            parent,
            name,
            entry,
            link,
        } => Change::Create {
            parent,
            name,
            // A CREAT of a directory cannot be made; MKDIR says it.
            entry,
            link,
        },
        other => other,
    }
}

proptest! {
    #[test]
    fn a_change_reads_back_from_its_record(c in changes(), path in names(), spath in names()) {
        let paths = Paths { path: path.clone(), spath: spath.clone() };
        let r = logged(&c, How::Event, &paths);
        prop_assert_eq!(r.kind, record_type(&c));
        let back = decode::change(&r.view()).expect("a record weir wrote decodes");
        prop_assert_eq!(back, as_recorded(&c));
        if !matches!(c, Change::MoveOut { .. }) {
            prop_assert_eq!(r.field("path"), Some(&path[..]));
        }
        if matches!(c, Change::Rename { .. } | Change::MoveOut { .. } | Change::MoveIn { .. }) {
            prop_assert_eq!(r.field("spath"), Some(&spath[..]));
        }
    }

    #[test]
    fn any_record_decodes_or_not_and_applies_without_harm(
        kind in 0u16..24,
        flags in any::<u16>(),
        target in proptest::collection::vec(any::<u8>(), 0..40),
        parent in proptest::collection::vec(any::<u8>(), 0..40),
        name in proptest::collection::vec(any::<u8>(), 0..8),
        fields in proptest::collection::vec((prop_oneof![Just("type"), Just("sparent"), Just("sname"), Just("exchanged"), Just("overwritten"), Just("path")], proptest::collection::vec(any::<u8>(), 0..48)), 0..5),
    ) {
        let r = LogRecord {
            index: 1,
            time_ns: 0,
            kind: RecordType(kind),
            flags,
            target,
            parent,
            name,
            fields: fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        };
        // Read from its frame, as a reader lends it, it decodes the same.
        if let Ok(frame) = r.to_frame() {
            let lent = weir_log::codec::check_frame(&frame).expect("a frame just encoded").record();
            prop_assert_eq!(decode::change(&lent), decode::change(&r.view()));
        }
        if let Some(c) = decode::change(&r.view()) {
            let mut t = Tree::new(oid(0));
            let _ = c.apply(&mut t);
            prop_assert_eq!(t.len(), t.listing().len());
        }
    }
}

#[test]
fn a_dir_creation_is_mkdir_and_flags_follow_how() {
    let c = Change::Create {
        parent: oid(0),
        name: b"d".to_vec(),
        entry: Entry {
            id: oid(1),
            kind: Kind::Dir,
        },
        link: false,
    };
    let r = logged(&c, How::Reconciled, &Paths::default());
    assert_eq!(r.kind, RecordType::MKDIR);
    assert_eq!(r.flags, FLAG_COMPARE | weir_log::FLAG_RECONCILED);
    assert_eq!(r.field("type"), None);
    let fifo = Change::Create {
        parent: oid(0),
        name: b"p".to_vec(),
        entry: Entry {
            id: oid(2),
            kind: Kind::Fifo,
        },
        link: false,
    };
    let r = logged(&fifo, How::Verified, &Paths::default());
    assert_eq!(
        (r.kind, r.flags, r.field("type")),
        (RecordType::MKNOD, FLAG_VERIFIED, Some(&b"fifo"[..]))
    );
}
