//! What an entry is: a file, a directory, a symlink or a node, from its
//! `st_mode`.

use std::fmt;

use rustix::fs::FileType;

/// The type of a directory entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    Char,
    /// A block device.
    Block,
    /// Not known: a non-directory gone before weir could look at it.
    Unknown,
}

impl Kind {
    /// The kind of a `st_mode`'s file type.
    pub fn from_file_type(t: FileType) -> Kind {
        match t {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            FileType::CharacterDevice => Kind::Char,
            FileType::BlockDevice => Kind::Block,
            _ => Kind::Unknown,
        }
    }

    /// The name records write in their `type` field.
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "dir",
            Kind::Symlink => "symlink",
            Kind::Fifo => "fifo",
            Kind::Socket => "socket",
            Kind::Char => "char",
            Kind::Block => "block",
            Kind::Unknown => "unknown",
        }
    }

    /// The kind [`Kind::name`] names.
    pub fn from_name(s: &[u8]) -> Option<Kind> {
        Some(match s {
            b"file" => Kind::File,
            b"dir" => Kind::Dir,
            b"symlink" => Kind::Symlink,
            b"fifo" => Kind::Fifo,
            b"socket" => Kind::Socket,
            b"char" => Kind::Char,
            b"block" => Kind::Block,
            b"unknown" => Kind::Unknown,
            _ => return None,
        })
    }

    /// Whether it is a directory.
    pub fn is_dir(self) -> bool {
        self == Kind::Dir
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in [
            Kind::File,
            Kind::Dir,
            Kind::Symlink,
            Kind::Fifo,
            Kind::Socket,
            Kind::Char,
            Kind::Block,
            Kind::Unknown,
        ] {
            assert_eq!(Kind::from_name(k.name().as_bytes()), Some(k));
        }
        assert_eq!(Kind::from_name(b"File"), None);
    }
}
