//! The mountinfo parser: text to [`Mount`]s.
//!
//! Fields are split at single spaces and never at runs of them: a mount
//! with an empty source shows as two spaces in a row. The only allocations
//! are the model's own boxed fields; escapes are decoded with
//! [`decode`]'s borrowed fast path.

use std::borrow::Cow;

use super::{Excerpt, Field, ParseError, ParseErrorKind};
use crate::escape::{decode, find};
use crate::model::{Mount, MountFlags, Propagation, SuperFlags};

/// Parses a whole mountinfo text. Lines end with `\n`, the last one
/// possibly without; empty text is an empty table.
pub fn parse(text: &[u8]) -> Result<Vec<Mount>, ParseError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    // Counting lines first costs a fast pass and saves the Vec's regrowths
    // (and their copies of large `Mount`s).
    let mut out = Vec::with_capacity(count_newlines(body) + 1);
    for (i, line) in split(body, b'\n').enumerate() {
        out.push(parse_line(line).map_err(|kind| ParseError::new(i + 1, kind))?);
    }
    Ok(out)
}

/// The number of `\n` in `s`. Counts into bytes over blocks of 255 so
/// that the compiler vectorizes it at full width.
fn count_newlines(s: &[u8]) -> usize {
    s.chunks(255)
        .map(|block| {
            let n = block
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'\n')));
            usize::from(n)
        })
        .sum()
}

/// Parses one line, without its `\n`.
pub fn parse_line(line: &[u8]) -> Result<Mount, ParseErrorKind> {
    if line.is_empty() {
        return Err(ParseErrorKind::EmptyLine);
    }
    let mut fields = split(line, b' ');
    let mut next = |field| fields.next().ok_or(ParseErrorKind::MissingField(field));
    let id = number_u32(next(Field::Id)?, Field::Id)?;
    let parent_id = number_u32(next(Field::ParentId)?, Field::ParentId)?;
    let (major, minor) = dev(next(Field::Dev)?)?;
    let root = next(Field::Root)?;
    let mount_point = next(Field::MountPoint)?;
    let flags = mount_flags(next(Field::Options)?)?;

    let mut propagation = Propagation::default();
    loop {
        match fields.next() {
            None => return Err(ParseErrorKind::NoSeparator),
            Some(b"-") => break,
            Some(tag) => optional_field(tag, &mut propagation)?,
        }
    }

    let mut next = |field| fields.next().ok_or(ParseErrorKind::MissingField(field));
    let fstype = next(Field::FsType)?;
    let source = next(Field::Source)?;
    let (super_flags, fs_options) = super_options(next(Field::SuperOptions)?)?;
    if let Some(extra) = fields.next() {
        return Err(ParseErrorKind::TooManyFields(Excerpt::new(extra)));
    }

    // The kernel writes `type.subtype`; a type has no dot of its own.
    let (fstype, subtype) = match find(fstype, b'.') {
        Some(dot) => (&fstype[..dot], Some(boxed(&fstype[dot + 1..]))),
        None => (fstype, None),
    };
    Ok(Mount {
        id: id.into(),
        parent_id: parent_id.into(),
        old_id: id,
        old_parent_id: parent_id,
        major,
        minor,
        root: boxed(root),
        mount_point: boxed(mount_point),
        fstype: boxed(fstype),
        subtype,
        source: boxed(source),
        flags,
        super_flags,
        fs_options: boxed(fs_options),
        propagation,
    })
}

/// A field, decoded, in the model's form.
fn boxed(field: &[u8]) -> Box<[u8]> {
    match decode(field) {
        Cow::Borrowed(b) => b.into(),
        Cow::Owned(v) => v.into_boxed_slice(),
    }
}

/// Decimal digits only: no sign, no space, no overflow.
pub(crate) fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n.checked_mul(10)?.checked_add(d.into())
    })
}

fn number_u32(s: &[u8], field: Field) -> Result<u32, ParseErrorKind> {
    number(s)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ParseErrorKind::BadNumber {
            field,
            text: Excerpt::new(s),
        })
}

pub(crate) fn dev(s: &[u8]) -> Result<(u32, u32), ParseErrorKind> {
    let bad = || ParseErrorKind::BadDev(Excerpt::new(s));
    let colon = s.iter().position(|&b| b == b':').ok_or_else(bad)?;
    let part = |p: &[u8]| number(p).and_then(|n| u32::try_from(n).ok());
    match (part(&s[..colon]), part(&s[colon + 1..])) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => Err(bad()),
    }
}

/// Splits off the first comma-separated word: the word, and what follows
/// its comma (`None` when there is no comma).
fn first_word(s: &[u8]) -> (&[u8], Option<&[u8]>) {
    match find(s, b',') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

/// Whether a field's first option says read-only; `None` when it is
/// neither `ro` nor `rw`, which the kernel always writes first.
fn read_only(word: &[u8]) -> Option<bool> {
    match word {
        b"ro" => Some(true),
        b"rw" => Some(false),
        _ => None,
    }
}

/// The per-mount options. Unknown words are skipped: a newer kernel may
/// name new flags.
pub(crate) fn mount_flags(s: &[u8]) -> Result<MountFlags, ParseErrorKind> {
    let (first, rest) = first_word(s);
    let mut flags = MountFlags::default();
    match read_only(first) {
        Some(true) => flags.insert(MountFlags::RDONLY),
        Some(false) => {}
        None => {
            return Err(ParseErrorKind::BadOptions {
                field: Field::Options,
                text: Excerpt::new(s),
            });
        }
    }
    for word in rest.into_iter().flat_map(|r| split(r, b',')) {
        if let Some((f, _)) = MountFlags::NAMED.iter().find(|(_, n)| n.as_bytes() == word) {
            flags.insert(*f);
        }
    }
    Ok(flags)
}

/// The superblock options: `ro`/`rw`, the run of superblock flag names
/// that follows, and the filesystem's own options (still escaped), which
/// are all the rest as written.
pub(crate) fn super_options(s: &[u8]) -> Result<(SuperFlags, &[u8]), ParseErrorKind> {
    let (first, mut rest) = first_word(s);
    let mut flags = SuperFlags::default();
    match read_only(first) {
        Some(true) => flags.insert(SuperFlags::RDONLY),
        Some(false) => {}
        None => {
            return Err(ParseErrorKind::BadOptions {
                field: Field::SuperOptions,
                text: Excerpt::new(s),
            });
        }
    }
    while let Some(r) = rest {
        let (word, after) = first_word(r);
        match SuperFlags::NAMED.iter().find(|(_, n)| n.as_bytes() == word) {
            Some((f, _)) => flags.insert(*f),
            None => return Ok((flags, r)),
        }
        rest = after;
    }
    Ok((flags, b""))
}

/// One optional field. Unknown tags are skipped, for newer kernels.
pub(crate) fn optional_field(tag: &[u8], p: &mut Propagation) -> Result<(), ParseErrorKind> {
    if tag == b"unbindable" {
        p.unbindable = true;
        return Ok(());
    }
    let Some(colon) = tag.iter().position(|&b| b == b':') else {
        return Ok(());
    };
    let slot = match &tag[..colon] {
        b"shared" => &mut p.shared,
        b"master" => &mut p.master,
        b"propagate_from" => &mut p.propagate_from,
        _ => return Ok(()),
    };
    let group =
        number(&tag[colon + 1..]).ok_or_else(|| ParseErrorKind::BadTag(Excerpt::new(tag)))?;
    *slot = Some(group);
    Ok(())
}

/// `s` split at each `sep`, like `slice::split` but with [`find`].
fn split(s: &[u8], sep: u8) -> Split<'_> {
    Split { rest: Some(s), sep }
}

/// The iterator of [`split`].
struct Split<'a> {
    rest: Option<&'a [u8]>,
    sep: u8,
}

impl<'a> Iterator for Split<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match find(rest, self.sep) {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}
