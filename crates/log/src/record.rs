//! Records: the borrowed form handed to `append` and the owned form read back.

use crate::kind::RecordType;

/// Record flag shared by every source: the change happened while no weir
/// was watching, and was found at start by comparing the live system with
/// the inventory weir last logged. Sources keep bits 0-7 for their own
/// flags, so this bit never collides with one of theirs.
pub const FLAG_RECONCILED: u16 = 1 << 15;

/// One extra key/value field of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The key: short, UTF-8, chosen by the program that writes the record.
    pub key: &'a str,
    /// The value: any bytes.
    pub value: &'a [u8],
}

/// A record to append. It borrows everything, so appending allocates nothing.
///
/// The log assigns the index and the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record type.
    pub kind: RecordType,
    /// Flags, meaning defined by the type.
    pub flags: u16,
    /// The object the record is about, as opaque bytes (a file handle, a mount id, a device number).
    pub target: &'a [u8],
    /// The object's parent, as opaque bytes.
    pub parent: &'a [u8],
    /// A name as raw bytes; it need not be UTF-8.
    pub name: &'a [u8],
    /// Extra fields.
    pub fields: &'a [Field<'a>],
}

impl<'a> Record<'a> {
    /// A record of type `kind` with every other part empty.
    pub const fn new(kind: RecordType) -> Self {
        Record {
            kind,
            flags: 0,
            target: &[],
            parent: &[],
            name: &[],
            fields: &[],
        }
    }

    /// Sets the flags.
    pub const fn flags(mut self, flags: u16) -> Self {
        self.flags = flags;
        self
    }

    /// Sets the target id.
    pub const fn target(mut self, target: &'a [u8]) -> Self {
        self.target = target;
        self
    }

    /// Sets the parent id.
    pub const fn parent(mut self, parent: &'a [u8]) -> Self {
        self.parent = parent;
        self
    }

    /// Sets the name.
    pub const fn name(mut self, name: &'a [u8]) -> Self {
        self.name = name;
        self
    }

    /// Sets the extra fields.
    pub const fn fields(mut self, fields: &'a [Field<'a>]) -> Self {
        self.fields = fields;
        self
    }
}

/// A record read back from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// Gap-free index, starting at 1.
    pub index: u64,
    /// Wall-clock time of the append, in ns since the Unix epoch. Concurrent
    /// writers may see times a few ns out of index order.
    pub time_ns: u64,
    /// The record type.
    pub kind: RecordType,
    /// Flags.
    pub flags: u16,
    /// Target id.
    pub target: Vec<u8>,
    /// Parent id.
    pub parent: Vec<u8>,
    /// Name bytes.
    pub name: Vec<u8>,
    /// Extra fields, in the order they were written.
    pub fields: Vec<(String, Vec<u8>)>,
}

impl LogRecord {
    /// The record's frame, encoded exactly as the log stores it. Fails only
    /// for a record built by hand with parts the format cannot hold.
    pub fn to_frame(&self) -> crate::Result<Vec<u8>> {
        let fields: Vec<Field<'_>> = self
            .fields
            .iter()
            .map(|(k, v)| Field { key: k, value: v })
            .collect();
        let r = Record::new(self.kind)
            .flags(self.flags)
            .target(&self.target)
            .parent(&self.parent)
            .name(&self.name)
            .fields(&fields);
        crate::codec::encode(&r, self.index, self.time_ns)
    }

    /// The value of the first field named `key`.
    pub fn field(&self, key: &str) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }
}
