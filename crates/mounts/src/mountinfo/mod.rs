//! /proc/self/mountinfo: its parser, its writer and the file to re-read.
//!
//! The fallback backend re-reads the whole table on every change, and the
//! text may come from anyone who can mount (a user namespace, a FUSE
//! daemon naming its source), so the parser is fast, allocates only the
//! model's own fields, and turns any malformed line into a typed
//! [`ParseError`] rather than a panic or a guess.
//!
//! A line (`man 5 proc_pid_mountinfo`):
//!
//! ```text
//! 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//! ```
//!
//! - [`parse`], [`parse_line`]: text to [`Mount`]s.
//! - [`render`], [`render_line`]: [`Mount`]s back to mountinfo text.
//! - [`MountinfoFile`]: the open file, re-read from the start each time.

mod file;
pub(crate) mod parse;
mod render;
#[cfg(test)]
mod tests;

use std::fmt;

pub use file::MountinfoFile;
pub use parse::{parse, parse_line};
pub use render::{render, render_line, render_line_into};

#[cfg(doc)]
use crate::Mount;

/// A line of mountinfo that did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    line: usize,
    kind: ParseErrorKind,
}

impl ParseError {
    /// The error `kind` on 1-based line `line`.
    pub fn new(line: usize, kind: ParseErrorKind) -> ParseError {
        ParseError { line, kind }
    }

    /// The 1-based number of the line.
    pub fn line(&self) -> usize {
        self.line
    }

    /// What is wrong with it.
    pub fn kind(&self) -> &ParseErrorKind {
        &self.kind
    }
}

/// What is wrong with a line of mountinfo.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The line is empty (only the end of the text may be).
    #[error("empty line")]
    EmptyLine,
    /// The line ends before this field.
    #[error("missing {0}")]
    MissingField(Field),
    /// A number is not decimal digits or does not fit.
    #[error("bad {field} {text}")]
    BadNumber {
        /// Which field.
        field: Field,
        /// The field as written.
        text: Excerpt,
    },
    /// The device is not `major:minor`.
    #[error("bad major:minor {0}")]
    BadDev(Excerpt),
    /// A known optional field (`shared:`, `master:`, `propagate_from:`)
    /// whose group is not a number.
    #[error("bad optional field {0}")]
    BadTag(Excerpt),
    /// No `-` field ends the optional fields.
    #[error("no \"-\" separator")]
    NoSeparator,
    /// An options field does not start with `ro` or `rw`.
    #[error("{field} do not start with ro or rw: {text}")]
    BadOptions {
        /// Which field.
        field: Field,
        /// The field as written.
        text: Excerpt,
    },
    /// More than type, source and super options after the `-`.
    #[error("extra field after the super options: {0}")]
    TooManyFields(Excerpt),
}

/// A field of a mountinfo line, to say where an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The mount id.
    Id,
    /// The parent's mount id.
    ParentId,
    /// `major:minor`.
    Dev,
    /// The root of the mount in its filesystem.
    Root,
    /// The mount point.
    MountPoint,
    /// The per-mount options.
    Options,
    /// The filesystem type.
    FsType,
    /// The mount source.
    Source,
    /// The superblock options.
    SuperOptions,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Id => "mount id",
            Field::ParentId => "parent id",
            Field::Dev => "major:minor",
            Field::Root => "root",
            Field::MountPoint => "mount point",
            Field::Options => "mount options",
            Field::FsType => "filesystem type",
            Field::Source => "source",
            Field::SuperOptions => "super options",
        })
    }
}

/// The start of a bad field, kept for an error message. Shown quoted, with
/// bytes other than printable ASCII escaped, so that a hostile line cannot
/// write control characters to a terminal or a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Excerpt {
    bytes: Box<[u8]>,
    truncated: bool,
}

impl Excerpt {
    /// How much of a field an error keeps.
    pub const MAX: usize = 64;

    /// The first [`Self::MAX`] bytes of `field`.
    pub fn new(field: &[u8]) -> Excerpt {
        let n = field.len().min(Self::MAX);
        Excerpt {
            bytes: field[..n].into(),
            truncated: n < field.len(),
        }
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the field was longer than what is kept.
    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

impl fmt::Display for Excerpt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &b in self.bytes.iter() {
            match b {
                b'"' | b'\\' => write!(f, "\\{}", b as char)?,
                0x20..=0x7e => write!(f, "{}", b as char)?,
                _ => write!(f, "\\x{b:02x}")?,
            }
        }
        f.write_str("\"")?;
        if self.truncated {
            f.write_str("...")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Excerpt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
