//! The tree's storage: every entry a fixed-size node in a slab (one slab
//! for directories, one for the rest), its name and its id's handle bytes
//! side by side in the node when they fit in 16 bytes (an ext4 handle and
//! an 8-byte name do), else in a byte arena, and the id prefixes (fsid,
//! handle type, handle length) interned in a small table, since a tree
//! seldom has more than one or two.
//!
//! Bytes in the node cost nothing more, and a lookup that compares them
//! reads no other cache line. Nodes are named by [`Ref`], a `u32`; freed
//! slots are reused, and the arena is compacted once renames and removals
//! have made half of it garbage (see `Tree::tidy`).

use crate::id::{HEADER, ObjectId};
use crate::kind::Kind;
use crate::tree::{Entry, TreeError};

/// No node: the root's parent, a list's end.
pub(super) const NIL: u32 = u32::MAX;

/// The nodes a slab holds at most: a slot's index must leave the top bit
/// of a [`Ref`] free, and never be [`NIL`].
const SLAB_MAX: u32 = (1 << 31) - 1;

/// The arena's size at most: offsets are `u32`.
const ARENA_MAX: usize = u32::MAX as usize;

/// The longest name a node holds (Linux's `NAME_MAX`).
pub(super) const NAME_MAX: usize = 255;

/// A node: a directory or another entry, by its slab and its index there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Ref(u32);

impl Ref {
    const DIR: u32 = 1 << 31;
    /// No node.
    pub(super) const NONE: Ref = Ref(NIL);

    /// Directory `i`.
    pub(super) fn dir(i: u32) -> Ref {
        Ref(i | Ref::DIR)
    }

    /// Non-directory `i`.
    pub(super) fn file(i: u32) -> Ref {
        Ref(i)
    }

    /// Whether it names a directory (not meaningful for [`Ref::NONE`]).
    pub(super) fn is_dir(self) -> bool {
        self.0 & Ref::DIR != 0
    }

    /// Its index in its slab.
    pub(super) fn index(self) -> u32 {
        self.0 & !Ref::DIR
    }
}

/// The bytes a node holds itself.
const INLINE: usize = 16;

/// What every node holds: 32 bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    /// The directory holding the entry (an index in the directory slab);
    /// [`NIL`] for the root.
    pub(super) parent: u32,
    /// The entry's siblings in its directory ([`Ref::NONE`] at the ends);
    /// for a free slot, `next` is the next free one.
    pub(super) next: Ref,
    pub(super) prev: Ref,
    /// The id's prefix, in the class table.
    pub(super) class: u16,
    /// Its [`Kind`] or [`FREE`], and [`OUT`] when its bytes are in the
    /// arena.
    kind: u8,
    nlen: u8,
    /// Its name, then its handle bytes; or, with [`OUT`], where they start
    /// in the arena (the first four bytes).
    bytes: [u8; INLINE],
}

impl Node {
    fn out(&self) -> bool {
        self.kind & OUT != 0
    }

    fn off(&self) -> usize {
        let [a, b, c, d, ..] = self.bytes;
        u32::from_ne_bytes([a, b, c, d]) as usize
    }
}

/// A directory's node: the entry, its first child, and how many children
/// it has, with a flag for whether the name table holds them (see
/// `Index`).
#[derive(Clone, Copy, Debug)]
pub(super) struct DirNode {
    pub(super) node: Node,
    pub(super) child: Ref,
    size: u32,
}

impl DirNode {
    /// `size`'s flag: the children are in the name table.
    const HASHED: u32 = 1 << 31;

    /// How many children it has.
    pub(super) fn len(&self) -> u32 {
        self.size & !DirNode::HASHED
    }

    /// Whether the name table holds its children.
    pub(super) fn hashed(&self) -> bool {
        self.size & DirNode::HASHED != 0
    }

    /// From now on, the name table holds its children.
    pub(super) fn set_hashed(&mut self) {
        self.size |= DirNode::HASHED;
    }

    /// A child was linked in (a slab's bound keeps the count below the
    /// flag).
    pub(super) fn grew(&mut self) {
        self.size += 1;
    }

    /// A child was unlinked.
    pub(super) fn shrank(&mut self) {
        debug_assert!(self.len() > 0);
        self.size -= 1;
    }
}

const _: () = assert!(size_of::<Node>() == 32 && size_of::<DirNode>() == 40);

/// A free slot's kind.
const FREE: u8 = 0x7f;
/// The kind's flag for bytes in the arena.
const OUT: u8 = 0x80;

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::File => 0,
        Kind::Dir => 1,
        Kind::Symlink => 2,
        Kind::Fifo => 3,
        Kind::Socket => 4,
        Kind::Char => 5,
        Kind::Block => 6,
        Kind::Unknown => 7,
    }
}

fn kind_of(c: u8) -> Kind {
    match c {
        0 => Kind::File,
        1 => Kind::Dir,
        2 => Kind::Symlink,
        3 => Kind::Fifo,
        4 => Kind::Socket,
        5 => Kind::Char,
        6 => Kind::Block,
        _ => Kind::Unknown,
    }
}

/// A slab's slots reach their node through this.
trait Slot: Copy {
    fn node(&self) -> &Node;
    fn node_mut(&mut self) -> &mut Node;
    fn new(node: Node) -> Self;
}

impl Slot for Node {
    fn node(&self) -> &Node {
        self
    }
    fn node_mut(&mut self) -> &mut Node {
        self
    }
    fn new(node: Node) -> Node {
        node
    }
}

impl Slot for DirNode {
    fn node(&self) -> &Node {
        &self.node
    }
    fn node_mut(&mut self) -> &mut Node {
        &mut self.node
    }
    fn new(node: Node) -> DirNode {
        DirNode {
            node,
            child: Ref::NONE,
            size: 0,
        }
    }
}

/// Nodes by index, with a free list through the free slots' `next`.
#[derive(Clone, Debug)]
struct Slab<T> {
    slots: Vec<T>,
    free: u32,
    live: u32,
}

impl<T: Slot> Slab<T> {
    fn new() -> Slab<T> {
        Slab {
            slots: Vec::new(),
            free: NIL,
            live: 0,
        }
    }

    fn has_room(&self) -> bool {
        self.free != NIL || self.slots.len() < SLAB_MAX as usize
    }

    /// Room for `n` live nodes in all, within the slab's bound.
    fn reserve_for(&mut self, n: usize) {
        // Free slots are reused first: they are among the slots.
        let more = n.min(SLAB_MAX as usize).saturating_sub(self.slots.len());
        self.slots.reserve_exact(more);
    }

    /// Puts `node` in a slot; the caller checked [`Slab::has_room`].
    fn alloc(&mut self, node: Node) -> u32 {
        self.live += 1;
        if self.free != NIL {
            let i = self.free;
            let slot = &mut self.slots[i as usize];
            self.free = slot.node().next.0;
            *slot = T::new(node);
            return i;
        }
        grow(&mut self.slots, 1);
        self.slots.push(T::new(node));
        (self.slots.len() - 1) as u32
    }

    fn free(&mut self, i: u32) {
        let n = self.slots[i as usize].node_mut();
        n.kind = FREE;
        n.bytes = [0; INLINE];
        n.next = Ref(self.free);
        self.free = i;
        self.live -= 1;
    }

    /// The live nodes whose bytes are in the arena.
    fn out_nodes(&mut self) -> impl Iterator<Item = &mut Node> {
        self.slots
            .iter_mut()
            .map(Slot::node_mut)
            .filter(|n| n.kind != FREE && n.out())
    }
}

/// Room for `more` in `v`, growing by half rather than doubling, so that a
/// big walk leaves less unused; the amortized cost stays constant.
fn grow<T>(v: &mut Vec<T>, more: usize) {
    if v.capacity() - v.len() < more {
        v.reserve_exact(more.max(v.capacity() / 2).max(16));
    }
}

/// An id's prefix: what a class stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Class {
    head: [u8; HEADER],
    hlen: u8,
}

/// Classes searched one by one before the map is asked.
const CLASSES_SCANNED: usize = 4;

/// The nodes, the arena and the class table.
#[derive(Clone, Debug)]
pub(super) struct Store {
    dirs: Slab<DirNode>,
    files: Slab<Node>,
    arena: Vec<u8>,
    /// Arena bytes no node points at.
    garbage: usize,
    classes: Vec<Class>,
    class_index: hashbrown::HashMap<Class, u16, foldhash::fast::RandomState>,
}

impl Store {
    /// A store holding only the root, directory 0.
    pub(super) fn new(root: &ObjectId) -> Store {
        let mut s = Store {
            dirs: Slab::new(),
            files: Slab::new(),
            arena: Vec::new(),
            garbage: 0,
            classes: Vec::new(),
            class_index: hashbrown::HashMap::default(),
        };
        // An empty table has room for a class, and the slab for a node.
        let class = s.intern(root).unwrap_or(0);
        s.alloc(true, NIL, class, Kind::Dir, root.parts().1, b"");
        s
    }

    /// Directory `d`.
    pub(super) fn dir(&self, d: u32) -> &DirNode {
        &self.dirs.slots[d as usize]
    }

    pub(super) fn dir_mut(&mut self, d: u32) -> &mut DirNode {
        &mut self.dirs.slots[d as usize]
    }

    /// The list of siblings that starts at `first`.
    pub(super) fn children(&self, first: Ref) -> impl Iterator<Item = Ref> + '_ {
        let some = |r: Ref| (r != Ref::NONE).then_some(r);
        std::iter::successors(some(first), move |&r| some(self.node(r).next))
    }

    pub(super) fn node(&self, r: Ref) -> &Node {
        if r.is_dir() {
            &self.dirs.slots[r.index() as usize].node
        } else {
            &self.files.slots[r.index() as usize]
        }
    }

    pub(super) fn node_mut(&mut self, r: Ref) -> &mut Node {
        if r.is_dir() {
            &mut self.dirs.slots[r.index() as usize].node
        } else {
            &mut self.files.slots[r.index() as usize]
        }
    }

    /// A node's name.
    pub(super) fn name<'a>(&'a self, n: &'a Node) -> &'a [u8] {
        let len = usize::from(n.nlen);
        if n.out() {
            &self.arena[n.off()..n.off() + len]
        } else {
            &n.bytes[..len]
        }
    }

    /// A node's handle bytes (its id without the class's prefix).
    pub(super) fn handle<'a>(&'a self, n: &'a Node) -> &'a [u8] {
        let (at, len) = (usize::from(n.nlen), self.hlen(n));
        if n.out() {
            &self.arena[n.off() + at..n.off() + at + len]
        } else {
            &n.bytes[at..at + len]
        }
    }

    fn hlen(&self, n: &Node) -> usize {
        usize::from(self.classes[usize::from(n.class)].hlen)
    }

    pub(super) fn id(&self, n: &Node) -> ObjectId {
        ObjectId::from_parts(&self.classes[usize::from(n.class)].head, self.handle(n))
    }

    pub(super) fn entry(&self, r: Ref) -> Entry {
        let n = self.node(r);
        Entry {
            id: self.id(n),
            kind: kind_of(n.kind & !OUT),
        }
    }

    /// The class of `id` and its handle bytes, if the tree has the class.
    pub(super) fn class_of<'a>(&self, id: &'a ObjectId) -> Option<(u16, &'a [u8])> {
        let (head, handle) = id.parts();
        let want = Class {
            head: *head,
            hlen: handle.len() as u8,
        };
        let i = if self.classes.len() <= CLASSES_SCANNED {
            self.classes.iter().position(|c| *c == want)? as u16
        } else {
            *self.class_index.get(&want)?
        };
        Some((i, handle))
    }

    /// The class of `id`, added if new; [`TreeError::Full`] when the table
    /// has `u16::MAX` classes already.
    pub(super) fn intern(&mut self, id: &ObjectId) -> Result<u16, TreeError> {
        if let Some((c, _)) = self.class_of(id) {
            return Ok(c);
        }
        let (head, handle) = id.parts();
        // A handle is at most MAX_HANDLE_SZ (128) bytes.
        let class = Class {
            head: *head,
            hlen: u8::try_from(handle.len()).map_err(|_| TreeError::Full)?,
        };
        let i = u16::try_from(self.classes.len()).map_err(|_| TreeError::Full)?;
        if i == u16::MAX {
            return Err(TreeError::Full);
        }
        self.classes.push(class);
        self.class_index.insert(class, i);
        Ok(i)
    }

    /// The live directory nodes (the root among them).
    pub(super) fn dir_count(&self) -> usize {
        self.dirs.live as usize
    }

    /// The live nodes that are not directories.
    pub(super) fn file_count(&self) -> usize {
        self.files.live as usize
    }

    /// Room for `dirs` directories and `files` other nodes in all, made at
    /// once (a tree about to be loaded whole), so that the slabs never
    /// grow and copy on the way.
    pub(super) fn reserve_nodes(&mut self, dirs: usize, files: usize) {
        self.dirs.reserve_for(dirs);
        self.files.reserve_for(files);
    }

    /// Makes room for one more node (a directory if `dir`) and `bytes` more
    /// of the arena, so that what follows cannot fail.
    pub(super) fn reserve(&mut self, node: Option<bool>, bytes: usize) -> Result<(), TreeError> {
        let room = match node {
            Some(true) => self.dirs.has_room(),
            Some(false) => self.files.has_room(),
            None => true,
        };
        if !room {
            return Err(TreeError::Full);
        }
        if self.arena.len() + bytes > ARENA_MAX {
            self.compact();
            if self.arena.len() + bytes > ARENA_MAX {
                return Err(TreeError::Full);
            }
        }
        Ok(())
    }

    /// A new node, unlinked (no siblings); the caller reserved its room and
    /// checked that the name is at most [`NAME_MAX`] bytes.
    pub(super) fn alloc(
        &mut self,
        dir: bool,
        parent: u32,
        class: u16,
        kind: Kind,
        handle: &[u8],
        name: &[u8],
    ) -> Ref {
        let mut node = Node {
            parent,
            next: Ref::NONE,
            prev: Ref::NONE,
            class,
            kind: kind_code(kind),
            nlen: 0,
            bytes: [0; INLINE],
        };
        self.place(&mut node, name, handle);
        if dir {
            Ref::dir(self.dirs.alloc(node))
        } else {
            Ref::file(self.files.alloc(node))
        }
    }

    /// Frees node `r`'s slot and its bytes.
    pub(super) fn free(&mut self, r: Ref) {
        let n = *self.node(r);
        self.garbage += self.span(&n);
        if r.is_dir() {
            self.dirs.free(r.index());
        } else {
            self.files.free(r.index());
        }
    }

    /// Gives node `r` the name `name` (the caller reserved the room).
    pub(super) fn rename(&mut self, r: Ref, name: &[u8]) {
        let mut n = *self.node(r);
        if self.name(&n) == name {
            return;
        }
        let mut handle = [0u8; 255];
        let len = self.hlen(&n);
        handle[..len].copy_from_slice(self.handle(&n));
        self.garbage += self.span(&n);
        self.place(&mut n, name, &handle[..len]);
        *self.node_mut(r) = n;
    }

    /// Writes `name` and `handle` into node `n`, or into the arena.
    fn place(&mut self, n: &mut Node, name: &[u8], handle: &[u8]) {
        n.nlen = name.len() as u8;
        n.bytes = [0; INLINE];
        if name.len() + handle.len() <= INLINE {
            n.kind &= !OUT;
            n.bytes[..name.len()].copy_from_slice(name);
            n.bytes[name.len()..name.len() + handle.len()].copy_from_slice(handle);
        } else {
            n.kind |= OUT;
            let off = self.arena.len() as u32;
            n.bytes[..4].copy_from_slice(&off.to_ne_bytes());
            grow(&mut self.arena, name.len() + handle.len());
            self.arena.extend_from_slice(name);
            self.arena.extend_from_slice(handle);
        }
    }

    /// Arena bytes a node's name and handle take.
    fn span(&self, n: &Node) -> usize {
        if n.out() {
            usize::from(n.nlen) + self.hlen(n)
        } else {
            0
        }
    }

    /// Whether the arena is more garbage than not (and the garbage worth a
    /// copy of the rest).
    pub(super) fn wants_compaction(&self, min_garbage: usize) -> bool {
        self.garbage > min_garbage && self.garbage * 2 > self.arena.len()
    }

    /// Copies every live node's bytes into a new arena, sized to fit.
    pub(super) fn compact(&mut self) {
        let live = self.arena.len() - self.garbage;
        let mut arena = Vec::with_capacity(live);
        let classes = &self.classes;
        let old = &self.arena;
        let nodes = self.dirs.out_nodes().chain(self.files.out_nodes());
        for n in nodes {
            let at = n.off();
            let end = at + usize::from(n.nlen) + usize::from(classes[usize::from(n.class)].hlen);
            n.bytes[..4].copy_from_slice(&(arena.len() as u32).to_ne_bytes());
            arena.extend_from_slice(&old[at..end]);
        }
        self.arena = arena;
        self.garbage = 0;
    }

    /// Live nodes, and slots (live and free).
    pub(super) fn occupancy(&self) -> (usize, usize) {
        (
            (self.dirs.live + self.files.live) as usize,
            self.dirs.slots.len() + self.files.slots.len(),
        )
    }

    /// Whether directory slot `d` holds a directory (not a free slot).
    pub(super) fn is_live_dir(&self, d: u32) -> bool {
        self.dirs
            .slots
            .get(d as usize)
            .is_some_and(|s| s.node.kind & !OUT != FREE)
    }

    /// Directory slots, live and free.
    pub(super) fn dir_slots(&self) -> u32 {
        self.dirs.slots.len() as u32
    }

    /// Live directories (the root included).
    pub(super) fn dirs(&self) -> usize {
        self.dirs.live as usize
    }

    /// The bytes the store holds on the heap.
    pub(super) fn heap_bytes(&self) -> usize {
        self.dirs.slots.capacity() * size_of::<DirNode>()
            + self.files.slots.capacity() * size_of::<Node>()
            + self.arena.capacity()
            + self.classes.capacity() * size_of::<Class>()
            + self.class_index.allocation_size()
    }

    /// The arena's length and garbage, for tests.
    #[cfg(test)]
    pub(super) fn arena_use(&self) -> (usize, usize) {
        (self.arena.len(), self.garbage)
    }
}
