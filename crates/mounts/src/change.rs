//! A change to the table: what a tracker reports and logs.

use crate::model::Mount;

/// One change to the mount table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// What happened.
    pub kind: ChangeKind,
    /// How it was seen.
    pub seen: Seen,
}

/// What happened to a mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A mount appeared.
    Attach(Mount),
    /// A mount appeared and was gone again before weir could read it; only
    /// its id is known.
    AttachGone {
        /// The mount's id.
        id: u64,
    },
    /// A mount went away. The mount as weir last knew it.
    Detach(Mount),
    /// A mount that weir knew only by its id (see `AttachGone`) went away.
    DetachGone {
        /// The mount's id.
        id: u64,
    },
    /// A mount moved to another place.
    Move {
        /// Where it was.
        old: Mount,
        /// Where it is now.
        new: Mount,
    },
    /// A mount's options, propagation or source changed in place.
    Change {
        /// Before.
        old: Mount,
        /// After.
        new: Mount,
    },
}

/// How a change was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// From a kernel event about this very mount (fanotify).
    Event,
    /// By comparing a fresh reading of the whole table with weir's: the
    /// mountinfo backend, remounts and propagation changes under fanotify,
    /// and the resynchronisation after a queue overflow.
    Compare,
    /// By comparing, at start, the table as last logged before the tracker
    /// stopped (a [`crate::Previous`]) with a fresh reading: the change
    /// happened while nothing was watching.
    Reconcile,
}

/// Which attributes differ between two readings of one mount.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs(pub u8);

impl Attrs {
    /// Per-mount flags (`ro`, `nosuid`, ...).
    pub const OPTIONS: Attrs = Attrs(1 << 0);
    /// Superblock flags or the filesystem's own options.
    pub const SUPER: Attrs = Attrs(1 << 1);
    /// Propagation.
    pub const PROPAGATION: Attrs = Attrs(1 << 2);
    /// Source.
    pub const SOURCE: Attrs = Attrs(1 << 3);
    /// Mount point or parent.
    pub const PLACE: Attrs = Attrs(1 << 4);
    /// What the mount is of: device, root, filesystem type. A mount whose
    /// identity changed under the same id is a different mount (mountinfo
    /// ids are reused).
    pub const IDENTITY: Attrs = Attrs(1 << 5);

    /// The names of the attributes, as the `changed` field lists them.
    pub const NAMED: [(Attrs, &'static str); 6] = [
        (Attrs::OPTIONS, "options"),
        (Attrs::SUPER, "super"),
        (Attrs::PROPAGATION, "propagation"),
        (Attrs::SOURCE, "source"),
        (Attrs::PLACE, "place"),
        (Attrs::IDENTITY, "identity"),
    ];

    /// The attributes a CHANGE carries values of: the attribute, the field
    /// of its new value and the field of its old one.
    pub const VALUED: [(Attrs, &'static str, &'static str); 4] = [
        (Attrs::OPTIONS, "options", "old_options"),
        (Attrs::SUPER, "super", "old_super"),
        (Attrs::PROPAGATION, "propagation", "old_propagation"),
        (Attrs::SOURCE, "source", "old_source"),
    ];

    /// The value of one attribute of `m`, as records and watch lines show
    /// it; `None` for an attribute that is not in [`Attrs::VALUED`].
    pub fn value_of(self, m: &Mount) -> Option<Vec<u8>> {
        match self {
            Attrs::OPTIONS => Some(m.flags.to_text().into_bytes()),
            Attrs::SUPER => Some(m.super_options()),
            Attrs::PROPAGATION => Some(m.propagation.to_text().into_bytes()),
            Attrs::SOURCE => Some(m.source.to_vec()),
            _ => None,
        }
    }

    /// Compares two readings of a mount.
    pub fn between(a: &Mount, b: &Mount) -> Attrs {
        let mut d = 0;
        if a.flags != b.flags {
            d |= Attrs::OPTIONS.0;
        }
        if a.super_flags != b.super_flags || a.fs_options != b.fs_options {
            d |= Attrs::SUPER.0;
        }
        if a.propagation != b.propagation {
            d |= Attrs::PROPAGATION.0;
        }
        if a.source != b.source {
            d |= Attrs::SOURCE.0;
        }
        if a.mount_point != b.mount_point || a.parent_id != b.parent_id {
            d |= Attrs::PLACE.0;
        }
        if (a.major, a.minor) != (b.major, b.minor)
            || a.root != b.root
            || a.fstype != b.fstype
            || a.subtype != b.subtype
        {
            d |= Attrs::IDENTITY.0;
        }
        Attrs(d)
    }

    /// Whether no attribute differs.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every attribute of `other` is in `self`.
    pub const fn contains(self, other: Attrs) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any attribute of `other` is in `self`.
    pub const fn intersects(self, other: Attrs) -> bool {
        self.0 & other.0 != 0
    }

    /// `self` and the attributes of `other`.
    pub const fn with(self, other: Attrs) -> Attrs {
        Attrs(self.0 | other.0)
    }

    /// `self` without the attributes of `other`.
    pub const fn without(self, other: Attrs) -> Attrs {
        Attrs(self.0 & !other.0)
    }

    /// The names, comma-separated: `options,super`.
    pub fn to_text(self) -> String {
        let names: Vec<&str> = Attrs::NAMED
            .iter()
            .filter(|(a, _)| self.contains(*a))
            .map(|(_, n)| *n)
            .collect();
        names.join(",")
    }
}

impl Change {
    /// The changes that take one reading of a mount to another of the same
    /// mount: a move if its place differs, then an in-place change if
    /// anything else does. Empty when nothing differs.
    pub fn between(old: &Mount, new: &Mount, seen: Seen) -> Vec<Change> {
        let d = Attrs::between(old, new);
        let mut out = Vec::new();
        if d.is_empty() {
            return out;
        }
        let mut before = old.clone();
        if d.contains(Attrs::PLACE) {
            let mut moved = old.clone();
            moved.mount_point = new.mount_point.clone();
            moved.parent_id = new.parent_id;
            moved.old_parent_id = new.old_parent_id;
            if d.without(Attrs::PLACE).is_empty() {
                moved = new.clone();
            }
            out.push(Change {
                kind: ChangeKind::Move {
                    old: before,
                    new: moved.clone(),
                },
                seen,
            });
            before = moved;
        }
        if !d.without(Attrs::PLACE).is_empty() {
            out.push(Change {
                kind: ChangeKind::Change {
                    old: before,
                    new: new.clone(),
                },
                seen,
            });
        }
        out
    }

    /// The change's name, as the record type names it without `MOUNT_`:
    /// `ATTACH`, `DETACH`, `MOVE` or `CHANGE`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            ChangeKind::Attach(_) | ChangeKind::AttachGone { .. } => "ATTACH",
            ChangeKind::Detach(_) | ChangeKind::DetachGone { .. } => "DETACH",
            ChangeKind::Move { .. } => "MOVE",
            ChangeKind::Change { .. } => "CHANGE",
        }
    }

    /// The id of the mount the change is about.
    pub fn id(&self) -> u64 {
        match &self.kind {
            ChangeKind::Attach(m) | ChangeKind::Detach(m) => m.id,
            ChangeKind::AttachGone { id } | ChangeKind::DetachGone { id } => *id,
            ChangeKind::Move { new, .. } | ChangeKind::Change { new, .. } => new.id,
        }
    }
}
