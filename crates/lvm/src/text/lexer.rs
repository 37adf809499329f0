//! The tokenizer of the libdm config grammar.
//!
//! As in libdm, what a token is depends on where it stands: after `=`, `[`
//! or `,` a leading digit, sign or dot starts a number and any other word
//! is a bare string; elsewhere the same bytes are a key.

use super::{TextError, TextErrorKind};

/// One token; slices borrow from the text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Tok<'a> {
    /// End of text (or a NUL byte).
    Eof,
    /// `{`.
    SectionB,
    /// `}`.
    SectionE,
    /// `[`.
    ArrayB,
    /// `]`.
    ArrayE,
    /// `,`.
    Comma,
    /// `=`.
    Eq,
    /// The bytes between double quotes, escapes not yet decoded.
    Quoted(&'a [u8]),
    /// The bytes between single quotes (no escapes).
    Raw(&'a [u8]),
    /// `[+-]?[0-9]*` (validated by the parser).
    Int(&'a [u8]),
    /// The same with one `.`.
    Float(&'a [u8]),
    /// A key, or a bare string in value position.
    Word(&'a [u8]),
}

/// Whitespace as C's `isspace` sees it (libdm uses it).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Where a token starts, for error reports.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pos {
    /// Byte offset from 0.
    pub(super) offset: usize,
    /// Line from 1.
    pub(super) line: u32,
}

impl Pos {
    /// An error at this position.
    pub(super) fn err(self, kind: TextErrorKind) -> TextError {
        TextError {
            kind,
            offset: self.offset,
            line: self.line,
        }
    }
}

/// A cursor over the text.
pub(super) struct Lexer<'a> {
    text: &'a [u8],
    pos: usize,
    line: u32,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `text`.
    pub(super) fn new(text: &'a [u8]) -> Self {
        Lexer {
            text,
            pos: 0,
            line: 1,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied().filter(|&b| b != 0)
    }

    /// Skips whitespace and `#` comments.
    fn skip_blank(&mut self) {
        while let Some(b) = self.peek() {
            if b == b'#' {
                while let Some(c) = self.peek() {
                    if c == b'\n' {
                        break;
                    }
                    self.pos += 1;
                }
            } else if is_space(b) {
                if b == b'\n' {
                    self.line = self.line.saturating_add(1);
                }
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// Advances while `keep` holds for the next byte (never past a NUL).
    fn take_while(&mut self, mut keep: impl FnMut(u8) -> bool) {
        while let Some(b) = self.peek() {
            if !keep(b) {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next token and where it starts. `values` says whether a value
    /// may stand here (after `=`, `[` or `,`).
    pub(super) fn next(&mut self, values: bool) -> Result<(Tok<'a>, Pos), TextError> {
        self.skip_blank();
        let at = Pos {
            offset: self.pos,
            line: self.line,
        };
        let Some(first) = self.peek() else {
            return Ok((Tok::Eof, at));
        };
        let start = self.pos;
        self.pos += 1;
        let tok = match first {
            b'{' => Tok::SectionB,
            b'}' => Tok::SectionE,
            b'[' => Tok::ArrayB,
            b']' => Tok::ArrayE,
            b',' => Tok::Comma,
            b'=' => Tok::Eq,
            b'"' => Tok::Quoted(self.quoted(at)?),
            b'\'' => {
                let body = self.pos;
                self.take_while(|b| b != b'\'');
                if self.peek() != Some(b'\'') {
                    return Err(at.err(TextErrorKind::UnterminatedString));
                }
                let s = &self.text[body..self.pos];
                self.count_lines(s);
                self.pos += 1;
                Tok::Raw(s)
            }
            b'.' | b'0'..=b'9' | b'+' | b'-' if values => {
                let mut float = first == b'.';
                self.take_while(|b| {
                    if b.is_ascii_digit() {
                        true
                    } else if b == b'.' && !float {
                        float = true;
                        true
                    } else {
                        false
                    }
                });
                let s = &self.text[start..self.pos];
                if float { Tok::Float(s) } else { Tok::Int(s) }
            }
            _ => {
                self.take_while(|b| !is_space(b) && !matches!(b, b'#' | b'=' | b'{' | b'}'));
                Tok::Word(&self.text[start..self.pos])
            }
        };
        Ok((tok, at))
    }

    /// The body of a double-quoted string (the opening quote consumed).
    fn quoted(&mut self, at: Pos) -> Result<&'a [u8], TextError> {
        let body = self.pos;
        loop {
            match self.peek() {
                None => return Err(at.err(TextErrorKind::UnterminatedString)),
                Some(b'"') => break,
                // A backslash protects the next byte, unless that is the end.
                Some(b'\\') if self.text.get(self.pos + 1).is_some_and(|&c| c != 0) => {
                    self.pos += 2;
                }
                Some(_) => self.pos += 1,
            }
        }
        let s = &self.text[body..self.pos];
        self.count_lines(s);
        self.pos += 1;
        Ok(s)
    }

    fn count_lines(&mut self, s: &[u8]) {
        let n = s.iter().filter(|&&b| b == b'\n').count();
        self.line = self
            .line
            .saturating_add(u32::try_from(n).unwrap_or(u32::MAX));
    }
}

/// Decodes a double-quoted body: `\"` and `\\` lose their backslash, any
/// other backslash stays (libdm's `dm_unescape_double_quotes`).
pub(super) fn unescape(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while let Some(&b) = body.get(i) {
        match body.get(i + 1) {
            Some(&n @ (b'"' | b'\\')) if b == b'\\' => {
                out.push(n);
                i += 2;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}
