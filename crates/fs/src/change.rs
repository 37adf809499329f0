//! What happened to a watched tree: one [`Change`] per record, and how it
//! was seen.
//!
//! Changes are absolute (each names the entries it touches and the ids
//! they hold), so applying one to a [`Tree`] is exact whoever applies it:
//! the tracker to its own tree, a consumer to a replay.

use crate::id::ObjectId;
use crate::tree::{Entry, Tree, TreeError};

/// How a change was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum How {
    /// From a fanotify event, as the kernel reported it.
    Event,
    /// From an event the kernel had merged with others, or that did not
    /// match what weir had logged: the entry's live state decided.
    Verified,
    /// From a comparison of the whole tree with a walk (after lost events).
    Compare,
    /// From the comparison at a start: it happened while nothing watched.
    Reconciled,
}

/// One change to a watched tree.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A new name: a new object (`link: false`) or a new name for an
    /// object the tree already holds (`link: true`, a hard link).
    Create {
        /// The directory.
        parent: ObjectId,
        /// The name.
        name: Vec<u8>,
        /// What it names.
        entry: Entry,
        /// Whether the object had another name in the tree.
        link: bool,
    },
    /// A name removed (a directory with it, which is empty by then).
    Remove {
        /// The directory.
        parent: ObjectId,
        /// The name.
        name: Vec<u8>,
        /// What it named.
        entry: Entry,
        /// Whether it was the object's last name in the tree.
        last: bool,
    },
    /// A rename inside the tree.
    Rename {
        /// The old directory.
        sparent: ObjectId,
        /// The old name.
        sname: Vec<u8>,
        /// The new directory.
        parent: ObjectId,
        /// The new name.
        name: Vec<u8>,
        /// What moved.
        entry: Entry,
        /// What the new name named before, replaced; with whether that was
        /// its last name.
        overwritten: Option<(Entry, bool)>,
        /// With `RENAME_EXCHANGE`, the entry that moved the other way.
        exchanged: Option<Entry>,
    },
    /// An entry moved out of the watched tree (to `parent`, outside it).
    MoveOut {
        /// The old directory.
        sparent: ObjectId,
        /// The old name.
        sname: Vec<u8>,
        /// The directory outside the tree.
        parent: ObjectId,
        /// The new name there.
        name: Vec<u8>,
        /// What moved.
        entry: Entry,
    },
    /// An entry moved into the watched tree from outside it.
    MoveIn {
        /// The directory outside the tree.
        sparent: ObjectId,
        /// The old name there.
        sname: Vec<u8>,
        /// The new directory.
        parent: ObjectId,
        /// The new name.
        name: Vec<u8>,
        /// What moved.
        entry: Entry,
    },
    /// Attributes or extended attributes changed (mode, owner, times set,
    /// xattrs).
    Attr {
        /// The entry's directory (for the root: the root).
        parent: ObjectId,
        /// Its name (empty for the root).
        name: Vec<u8>,
        /// The object.
        id: ObjectId,
    },
    /// Content written (or truncated), coalesced per close or interval.
    Modify {
        /// The entry's directory.
        parent: ObjectId,
        /// Its name.
        name: Vec<u8>,
        /// The object.
        id: ObjectId,
    },
}

impl Change {
    /// Applies the change to `tree`. Attribute and content changes leave
    /// the namespace as it is.
    pub fn apply(&self, tree: &mut Tree) -> Result<(), TreeError> {
        match self {
            Change::Create {
                parent,
                name,
                entry,
                ..
            }
            | Change::MoveIn {
                parent,
                name,
                entry,
                ..
            } => tree.insert(parent, name, entry.clone()).map(drop),
            Change::Remove { parent, name, .. } => {
                tree.remove(parent, name);
                Ok(())
            }
            Change::MoveOut { sparent, sname, .. } => {
                tree.remove(sparent, sname);
                Ok(())
            }
            Change::Rename {
                sparent,
                sname,
                parent,
                name,
                exchanged,
                ..
            } => match exchanged {
                Some(_) => tree.exchange((sparent, sname), (parent, name)),
                None => tree.rename(sparent, sname, parent, name).map(drop),
            },
            Change::Attr { .. } | Change::Modify { .. } => Ok(()),
        }
    }

    /// The object the change is about.
    pub fn id(&self) -> &ObjectId {
        match self {
            Change::Create { entry, .. }
            | Change::Remove { entry, .. }
            | Change::Rename { entry, .. }
            | Change::MoveOut { entry, .. }
            | Change::MoveIn { entry, .. } => &entry.id,
            Change::Attr { id, .. } | Change::Modify { id, .. } => id,
        }
    }
}
