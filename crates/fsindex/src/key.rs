//! Key layouts: byte strings whose order groups rows as the scans need.
//!
//! Every key starts with the root's number, 4 bytes big-endian, so a root's
//! rows are one range. A directory's id has a one-byte length before it,
//! so a prefix ends exactly where the id ends: the buckets of directory
//! `ab` are never mixed with those of `abc`, whose length byte differs.
//! (docs/format.md has the table.)
//!
//! - `dirs`: root, len(id), id
//! - `buckets`: root, len(dir), dir, bucket number (u32 big-endian)

use std::ops::Bound;

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

/// The prefix of every row of a root.
pub(crate) fn root(root: RootNo) -> [u8; 4] {
    root.0.to_be_bytes()
}

/// A directory's key, and the prefix of its buckets' keys.
pub(crate) fn dir(root: RootNo, id: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + id.len());
    k.extend_from_slice(&root.0.to_be_bytes());
    // Lengths were checked (`check_id`) before any key is made.
    k.push(id.len() as u8);
    k.extend_from_slice(id);
    k
}

/// A bucket's key: the directory's key, then the bucket's number.
pub(crate) fn bucket(dir_key: &[u8], no: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(dir_key.len() + 4);
    k.extend_from_slice(dir_key);
    k.extend_from_slice(&no.to_be_bytes());
    k
}

/// A directory key's root and id.
pub(crate) fn split_dir(k: &[u8]) -> Result<(RootNo, &[u8])> {
    let bad = || Error::Corrupt {
        table: "dirs",
        what: "key",
    };
    let (root, rest) = k.split_first_chunk::<4>().ok_or_else(bad)?;
    let (&len, id) = rest.split_first().ok_or_else(bad)?;
    if id.is_empty() || id.len() != usize::from(len) {
        return Err(bad());
    }
    Ok((RootNo(u32::from_be_bytes(*root)), id))
}

/// A bucket key's directory id and bucket number.
pub(crate) fn split_bucket(k: &[u8]) -> Result<(&[u8], u32)> {
    let bad = || Error::Corrupt {
        table: "buckets",
        what: "key",
    };
    let (dir_key, no) = k.split_last_chunk::<4>().ok_or_else(bad)?;
    let (_, id) = split_dir(dir_key).map_err(|_| bad())?;
    Ok((id, u32::from_be_bytes(*no)))
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

/// The bounds of the keys that start with `prefix`, given its
/// [`prefix_end`].
pub(crate) fn bounds<'a>(
    prefix: &'a [u8],
    end: &'a Option<Vec<u8>>,
) -> (Bound<&'a [u8]>, Bound<&'a [u8]>) {
    let end = match end {
        Some(e) => Bound::Excluded(e.as_slice()),
        None => Bound::Unbounded,
    };
    (Bound::Included(prefix), end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shorter_id_is_not_a_prefix_of_a_longer() {
        let a = dir(RootNo(1), b"ab");
        let b = dir(RootNo(1), b"abc");
        assert!(!b.starts_with(&a));
        let k = bucket(&b, 0x6300_0000);
        assert!(!k.starts_with(&a));
        assert!(k.starts_with(&b));
    }

    #[test]
    fn splits_what_it_joins() {
        let d = dir(RootNo(7), b"p\n\xff");
        assert_eq!(split_dir(&d).unwrap(), (RootNo(7), &b"p\n\xff"[..]));
        let k = bucket(&d, 9);
        assert_eq!(split_bucket(&k).unwrap(), (&b"p\n\xff"[..], 9));
        assert!(split_dir(&[0, 0, 0, 7, 9, 1]).is_err());
        assert!(split_bucket(&[0, 0, 0, 7, 0, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
    }
}
