//! Key layouts: byte strings whose order groups rows as the scans need.
//!
//! Every key starts with the root's number, 4 bytes big-endian, so a root's
//! rows are one range. Each variable part but the last has a one-byte
//! length before it, so a prefix ends exactly where its part ends: the
//! entries of directory `ab` are never mixed with those of `abc`, whose
//! length byte differs. (docs/format.md has the table.)
//!
//! - `dirs`: root, len(id), id
//! - `entries`: root, len(parent), parent, name
//! - `by_id`: root, len(id), id, len(parent), parent, name

use crate::error::{Error, Result};
use crate::types::{ID_MAX, NAME_MAX, RootNo};

/// Checks an id's length: 1 to [`ID_MAX`] bytes.
pub(crate) fn check_id(id: &[u8]) -> Result<()> {
    if id.is_empty() || id.len() > ID_MAX {
        return Err(Error::IdLength { len: id.len() });
    }
    Ok(())
}

/// Checks a name's length: at most [`NAME_MAX`] bytes.
pub(crate) fn check_name(name: &[u8]) -> Result<()> {
    if name.len() > NAME_MAX {
        return Err(Error::NameLength { len: name.len() });
    }
    Ok(())
}

fn push_part(out: &mut Vec<u8>, part: &[u8]) {
    // Lengths were checked (`check_id`, `check_name`) before any key is made.
    out.push(part.len() as u8);
    out.extend_from_slice(part);
}

/// The prefix of every row of a root.
pub(crate) fn root(root: RootNo) -> [u8; 4] {
    root.0.to_be_bytes()
}

/// A directory's key, and the prefix of a directory's entries.
pub(crate) fn dir(root: RootNo, id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(5 + id.len());
    k.extend_from_slice(&root.0.to_be_bytes());
    push_part(&mut k, id);
    k
}

/// An entry's key.
pub(crate) fn entry(root: RootNo, parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut k = dir(root, parent);
    k.extend_from_slice(name);
    k
}

/// A by-id key: the prefix of an id's names with the name appended.
pub(crate) fn by_id(root: RootNo, id: &[u8], parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut k = dir(root, id);
    push_part(&mut k, parent);
    k.extend_from_slice(name);
    k
}

/// Splits one length-prefixed part off the front of `b`.
fn split_part(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&len, rest) = b.split_first()?;
    let len = usize::from(len);
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// An entry key's directory and name.
pub(crate) fn split_entry(k: &[u8]) -> Result<(&[u8], &[u8])> {
    let bad = || Error::Corrupt {
        table: "entries",
        what: "key",
    };
    let rest = k.get(4..).ok_or_else(bad)?;
    let (parent, name) = split_part(rest).ok_or_else(bad)?;
    if parent.is_empty() || name.len() > NAME_MAX {
        return Err(bad());
    }
    Ok((parent, name))
}

/// A by-id key's directory and name (after the given id prefix).
pub(crate) fn split_by_id(k: &[u8], prefix_len: usize) -> Result<(&[u8], &[u8])> {
    let bad = || Error::Corrupt {
        table: "by_id",
        what: "key",
    };
    let rest = k.get(prefix_len..).ok_or_else(bad)?;
    let (parent, name) = split_part(rest).ok_or_else(bad)?;
    if parent.is_empty() || name.len() > NAME_MAX {
        return Err(bad());
    }
    Ok((parent, name))
}

/// The first key after every key that starts with `prefix`, if there is
/// one (a prefix of only 0xff bytes has none).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shorter_id_is_not_a_prefix_of_a_longer() {
        let a = dir(RootNo(1), b"ab");
        let b = dir(RootNo(1), b"abc");
        assert!(!b.starts_with(&a));
        let e = entry(RootNo(1), b"abc", b"x");
        assert!(!e.starts_with(&a));
        assert!(e.starts_with(&b));
    }

    #[test]
    fn splits_what_it_joins() {
        let e = entry(RootNo(7), b"p\n\xff", b"n\x00m");
        assert_eq!(split_entry(&e).unwrap(), (&b"p\n\xff"[..], &b"n\x00m"[..]));
        let prefix = dir(RootNo(7), b"id");
        let k = by_id(RootNo(7), b"id", b"par", b"");
        assert_eq!(
            split_by_id(&k, prefix.len()).unwrap(),
            (&b"par"[..], &b""[..])
        );
        assert!(split_entry(&[0, 0, 0, 7, 9, 1]).is_err());
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
    }
}
