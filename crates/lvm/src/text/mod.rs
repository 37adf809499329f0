//! The libdm config grammar that LVM2 metadata text is written in, parsed
//! into a small value tree ([`Section`]) and written back ([`render`]).
//!
//! The grammar (libdm/libdm-config.c): a file is a list of entries; an
//! entry is `key { entries }` or `key = value`; a value is an integer, a
//! float, a string (`"..."` with `\"` and `\\` escapes, `'...'` raw, or a
//! bare word) or an `[ ... ]` array of those; `#` starts a comment. A NUL
//! byte ends the text, as in libdm (metadata areas pad texts with NULs).
//!
//! The text comes from a disk and is hostile: nesting is bounded by
//! [`MAX_DEPTH`] and handled with an explicit stack (no recursion), integers
//! that do not fit an `i64` are errors, every error is a typed
//! [`TextError`] with its byte offset and line, and the work is linear in
//! the input.

mod lexer;
mod parser;
mod render;
#[cfg(test)]
mod tests;

pub use parser::parse;
pub use render::render;

/// The deepest nesting of sections accepted. LVM's own texts nest five
/// deep (VG, `logical_volumes`, LV, segment); 64 leaves room and bounds
/// the parser's stack.
pub const MAX_DEPTH: usize = 64;

/// A section: its entries in text order. Keys may repeat (libdm keeps
/// them too); readers such as [`crate::meta`] decide what that means.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Section {
    /// The entries, in text order.
    pub entries: Vec<Entry>,
}

/// One `key = value` or `key { ... }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key, as bytes (escapes decoded when it was quoted). Never empty
    /// and never holds a NUL byte when it comes from [`parse`].
    pub key: Vec<u8>,
    /// What the key names.
    pub item: Item,
}

/// What an entry holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `key = value`.
    Value(Value),
    /// `key { ... }`.
    Section(Section),
}

/// The right-hand side of `key = value`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// One integer, float or string.
    Scalar(Scalar),
    /// `[ ... ]`: scalars only (the grammar has no nested arrays).
    Array(Vec<Scalar>),
}

/// One integer, float or string.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A decimal integer (or octal with a leading `0`, as `strtoll` reads
    /// it in libdm).
    Int(i64),
    /// A number with a `.`; always finite.
    Float(f64),
    /// A string's bytes, escapes decoded. Never holds a NUL byte when it
    /// comes from [`parse`].
    Str(Vec<u8>),
}

/// Why a text does not parse, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metadata text: {kind} at byte {offset} (line {line})")]
#[non_exhaustive]
pub struct TextError {
    /// What is wrong.
    pub kind: TextErrorKind,
    /// The byte offset (from 0) of the token at fault.
    pub offset: usize,
    /// Its line (from 1).
    pub line: u32,
}

/// What is wrong with a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TextErrorKind {
    /// The text ends inside a section, an entry or an array.
    #[error("unexpected end of text")]
    Truncated,
    /// A string has no closing quote.
    #[error("unterminated string")]
    UnterminatedString,
    /// A token that cannot stand here.
    #[error("expected {expected}")]
    Unexpected {
        /// What could have stood here.
        expected: Expected,
    },
    /// A `}` with no open section.
    #[error("unbalanced '}}'")]
    Unbalanced,
    /// A key is empty (`"" = 1`).
    #[error("empty key")]
    EmptyKey,
    /// Sections nest deeper than [`MAX_DEPTH`].
    #[error("sections nested deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A number token that is not a number (`-`, `08`).
    #[error("malformed number")]
    BadNumber,
    /// An integer outside the `i64` range.
    #[error("integer out of range")]
    IntOverflow,
}

/// What the parser expected, for [`TextErrorKind::Unexpected`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Expected {
    /// A key (an entry's start) or `}`.
    #[error("a key")]
    Key,
    /// `=` or `{` after a key.
    #[error("'=' or '{{'")]
    EqOrSection,
    /// A value after `=`.
    #[error("a value")]
    Value,
    /// A scalar, `,` or `]` inside an array.
    #[error("an array item or ']'")]
    ArrayItem,
}
