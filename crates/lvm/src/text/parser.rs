//! The parser: tokens into a [`Section`] tree, with an explicit stack of
//! open sections so that hostile nesting costs heap, bounded by
//! [`MAX_DEPTH`], never call stack.

use super::lexer::{Lexer, Pos, Tok, unescape};
use super::{Entry, Expected, Item, MAX_DEPTH, Scalar, Section, TextError, TextErrorKind, Value};

/// What libdm substitutes for a `creation_time` that overflows: LVM
/// builds before 2.02.169 on 32-bit hosts could write such a value, and
/// LVM reads it as this date (2018-05-24) instead of failing.
const REPAIRED_CREATION_TIME: i64 = 1_527_120_000;

/// Parses a whole text into its top-level section.
///
/// Linear in the input; never panics. A NUL byte ends the text, as in
/// libdm.
pub fn parse(text: &[u8]) -> Result<Section, TextError> {
    let mut lx = Lexer::new(text);
    // The sections opened and not yet closed, outermost first, each with
    // the key it will be stored under; `cur` is the innermost.
    let mut open: Vec<(Vec<u8>, Section)> = Vec::new();
    let mut cur = Section::default();
    loop {
        let (tok, at) = lx.next(false)?;
        let key = match tok {
            Tok::Eof if open.is_empty() => return Ok(cur),
            Tok::Eof => return Err(at.err(TextErrorKind::Truncated)),
            Tok::SectionE => {
                let Some((key, mut parent)) = open.pop() else {
                    return Err(at.err(TextErrorKind::Unbalanced));
                };
                let done = std::mem::take(&mut cur);
                parent.entries.push(Entry {
                    key,
                    item: Item::Section(done),
                });
                cur = parent;
                continue;
            }
            Tok::Word(w) => w.to_vec(),
            Tok::Quoted(q) => unescape(q),
            Tok::Raw(r) => r.to_vec(),
            _ => return Err(unexpected(at, Expected::Key)),
        };
        if key.is_empty() {
            return Err(at.err(TextErrorKind::EmptyKey));
        }
        let (tok, at) = lx.next(false)?;
        match tok {
            Tok::SectionB => {
                if open.len() >= MAX_DEPTH {
                    return Err(at.err(TextErrorKind::TooDeep));
                }
                open.push((key, std::mem::take(&mut cur)));
            }
            Tok::Eq => {
                let value = parse_value(&mut lx, &key)?;
                cur.entries.push(Entry {
                    key,
                    item: Item::Value(value),
                });
            }
            Tok::Eof => return Err(at.err(TextErrorKind::Truncated)),
            _ => return Err(unexpected(at, Expected::EqOrSection)),
        }
    }
}

fn unexpected(at: Pos, expected: Expected) -> TextError {
    at.err(TextErrorKind::Unexpected { expected })
}

/// The value after `=`: a scalar or an array.
fn parse_value(lx: &mut Lexer<'_>, key: &[u8]) -> Result<Value, TextError> {
    let (tok, at) = lx.next(true)?;
    match tok {
        Tok::ArrayB => {}
        Tok::Eof => return Err(at.err(TextErrorKind::Truncated)),
        _ => {
            return scalar(tok, at, true, key)?
                .map(Value::Scalar)
                .ok_or_else(|| unexpected(at, Expected::Value));
        }
    }
    let mut items = Vec::new();
    // As in libdm, commas are optional between items, but a word right
    // after an item (no comma) is read as a key, which is no item.
    let (mut tok, mut at) = lx.next(true)?;
    let mut values = true;
    loop {
        match tok {
            Tok::ArrayE => return Ok(Value::Array(items)),
            Tok::Eof => return Err(at.err(TextErrorKind::Truncated)),
            _ => match scalar(tok, at, values, key)? {
                Some(s) => items.push(s),
                None => return Err(unexpected(at, Expected::ArrayItem)),
            },
        }
        (tok, at) = lx.next(false)?;
        values = false;
        if tok == Tok::Comma {
            (tok, at) = lx.next(true)?;
            values = true;
        }
    }
}

/// A token as a scalar; `None` if it is not one. `values` says whether the
/// token was read where a value may stand (a word there is a bare string).
fn scalar(tok: Tok<'_>, at: Pos, values: bool, key: &[u8]) -> Result<Option<Scalar>, TextError> {
    Ok(Some(match tok {
        Tok::Quoted(q) => Scalar::Str(unescape(q)),
        Tok::Raw(r) => Scalar::Str(r.to_vec()),
        Tok::Word(w) if values => Scalar::Str(w.to_vec()),
        Tok::Int(s) => match parse_int(s) {
            Ok(i) => Scalar::Int(i),
            Err(TextErrorKind::IntOverflow) if key == b"creation_time" => {
                Scalar::Int(REPAIRED_CREATION_TIME)
            }
            Err(kind) => return Err(at.err(kind)),
        },
        Tok::Float(s) => Scalar::Float(parse_float(s).ok_or(at.err(TextErrorKind::BadNumber))?),
        _ => return Ok(None),
    }))
}

/// An integer token as `strtoll(s, _, 0)` reads it when it must consume
/// the whole token: optional sign, then decimal, or octal after a `0`.
fn parse_int(s: &[u8]) -> Result<i64, TextErrorKind> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(TextErrorKind::BadNumber);
    }
    let radix: u64 = if digits.len() > 1 && digits[0] == b'0' {
        8
    } else {
        10
    };
    let mut mag: u64 = 0;
    for &d in digits {
        let d = u64::from(d - b'0');
        if d >= radix {
            return Err(TextErrorKind::BadNumber);
        }
        mag = mag
            .checked_mul(radix)
            .and_then(|m| m.checked_add(d))
            .ok_or(TextErrorKind::IntOverflow)?;
    }
    if neg {
        // -(2^63) fits though 2^63 does not.
        0i64.checked_sub_unsigned(mag)
            .ok_or(TextErrorKind::IntOverflow)
    } else {
        i64::try_from(mag).map_err(|_| TextErrorKind::IntOverflow)
    }
}

/// A float token (`[+-]?[0-9]*.[0-9]*`); `None` if it has no digit or
/// does not fit a finite `f64`.
fn parse_float(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}
