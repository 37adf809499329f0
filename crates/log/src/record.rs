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

    /// The record as a borrowed [`RecordRef`].
    pub fn view(&self) -> RecordRef<'_> {
        RecordRef {
            index: self.index,
            time_ns: self.time_ns,
            kind: self.kind,
            flags: self.flags,
            target: &self.target,
            parent: &self.parent,
            name: &self.name,
            fields: Fields::Owned(&self.fields),
        }
    }
}

/// A record read back, borrowing its parts: from a frame in the reader's
/// buffer ([`crate::Reader::for_each_record`]), so that reading allocates
/// nothing per record, or from a [`LogRecord`] ([`LogRecord::view`]).
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    /// Gap-free index, starting at 1.
    pub index: u64,
    /// Wall-clock time of the append, in ns since the Unix epoch.
    pub time_ns: u64,
    /// The record type.
    pub kind: RecordType,
    /// Flags.
    pub flags: u16,
    /// Target id.
    pub target: &'a [u8],
    /// Parent id.
    pub parent: &'a [u8],
    /// Name bytes.
    pub name: &'a [u8],
    pub(crate) fields: Fields<'a>,
}

/// Where a [`RecordRef`]'s extra fields are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fields<'a> {
    /// Still encoded: the frame's field area, read as asked.
    Frame(crate::codec::FieldArea<'a>),
    /// A [`LogRecord`]'s.
    Owned(&'a [(String, Vec<u8>)]),
}

impl<'a> RecordRef<'a> {
    /// The value of the first field named `key`.
    pub fn field(&self, key: &str) -> Option<&'a [u8]> {
        match self.fields {
            Fields::Frame(area) => area
                .iter()
                .find(|(k, _)| *k == key.as_bytes())
                .map(|(_, v)| v),
            Fields::Owned(f) => f.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_slice()),
        }
    }

    /// The extra fields, in the order they were written.
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + use<'a> {
        let (frame, owned) = match self.fields {
            Fields::Frame(area) => (Some(area.iter()), None),
            Fields::Owned(f) => (None, Some(f.iter())),
        };
        // A frame's keys were checked as UTF-8 when it was read.
        let frame = frame
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((std::str::from_utf8(k).ok()?, v)));
        let owned = owned
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_slice()));
        frame.chain(owned)
    }

    /// Copies the record into an owned one.
    pub fn to_record(&self) -> LogRecord {
        LogRecord {
            index: self.index,
            time_ns: self.time_ns,
            kind: self.kind,
            flags: self.flags,
            target: self.target.to_vec(),
            parent: self.parent.to_vec(),
            name: self.name.to_vec(),
            fields: self
                .fields()
                .map(|(k, v)| (k.to_owned(), v.to_vec()))
                .collect(),
        }
    }
}
