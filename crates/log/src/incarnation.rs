//! The log's incarnation: a random 128-bit id made when the log is first
//! opened, kept in `incarnation` beside the segments.
//!
//! An index names a record only within one history of a log. A state
//! directory that is wiped and made again starts at index 1 once more, and
//! a reader outside the host (a broker's stream, a fleet's consumers) must
//! not take its records for the old ones. The pair (incarnation, index)
//! names one record for good: retention keeps the incarnation, a new
//! directory gets a new one.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, read_file, replace_file};

/// The incarnation file's name in the log directory.
pub const INCARNATION_FILE: &str = "incarnation";

/// The file holds 32 lowercase hex digits and a newline.
const FILE_LEN: u64 = 33;

/// One history of a log; shown as 32 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Incarnation(pub [u8; 16]);

impl fmt::Display for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Text that is not 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an incarnation is 32 lowercase hex digits")]
pub struct BadIncarnation;

impl FromStr for Incarnation {
    type Err = BadIncarnation;

    fn from_str(s: &str) -> std::result::Result<Incarnation, BadIncarnation> {
        let b = s.as_bytes();
        if b.len() != 32 {
            return Err(BadIncarnation);
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(BadIncarnation),
        };
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = digit(b[2 * i])? << 4 | digit(b[2 * i + 1])?;
        }
        Ok(Incarnation(out))
    }
}

impl Incarnation {
    /// A new random incarnation, from the kernel's random pool.
    fn random() -> std::io::Result<Incarnation> {
        let mut out = [0u8; 16];
        let mut filled = 0;
        while filled < out.len() {
            filled +=
                rustix::rand::getrandom(&mut out[filled..], rustix::rand::GetRandomFlags::empty())?;
        }
        Ok(Incarnation(out))
    }
}

/// Reads the incarnation of the log in `dir`, or `None` if it has none yet
/// (a log no writer has opened since incarnations were introduced). Needs
/// no lock: the file is only ever replaced whole.
pub fn read_incarnation(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Incarnation>> {
    let path = dir.join(INCARNATION_FILE);
    let Some(bytes) = read_file(fs, &path, FILE_LEN).map_err(|e| Error::io("read", &path, e))?
    else {
        return Ok(None);
    };
    let parsed = bytes
        .ok()
        .and_then(|b| b.strip_suffix(b"\n").map(<[u8]>::to_vec))
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.parse().ok());
    parsed.map(Some).ok_or(Error::BadIncarnation { path })
}

/// The incarnation of the log in `dir`, made (and made durable) if the
/// log has none. Called by the writer, under the directory's lock.
pub(crate) fn load_or_create(fs: &dyn FileSystem, dir: &Path) -> Result<Incarnation> {
    if let Some(i) = read_incarnation(fs, dir)? {
        return Ok(i);
    }
    let path = dir.join(INCARNATION_FILE);
    let i = Incarnation::random().map_err(|e| Error::io("getrandom", &path, e))?;
    replace_file(fs, &path, format!("{i}\n").as_bytes())
        .map_err(|f| Error::io("write", &path, f.into_source()))?;
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::MemFs;
    use proptest::prelude::*;

    const DIR: &str = "/log";

    #[test]
    fn a_log_keeps_the_incarnation_it_was_given() {
        let fs = MemFs::new();
        let dir = Path::new(DIR);
        fs.create_dir_all(dir).unwrap();
        assert_eq!(read_incarnation(&fs, dir).unwrap(), None);
        let first = load_or_create(&fs, dir).unwrap();
        assert_eq!(load_or_create(&fs, dir).unwrap(), first);
        assert_eq!(read_incarnation(&fs, dir).unwrap(), Some(first));
        let fresh = MemFs::new();
        fresh.create_dir_all(dir).unwrap();
        let other = load_or_create(&fresh, dir).unwrap();
        assert_ne!(other, first, "two logs drew the same 128 random bits");
    }

    #[test]
    fn a_damaged_file_is_refused_not_replaced() {
        for bad in [
            &b""[..],
            b"00",
            b"0123456789abcdef0123456789ABCDEF\n",
            b"0123456789abcdef0123456789abcdef",
            b"0123456789abcdef0123456789abcdef\n\n",
        ] {
            let fs = MemFs::new();
            fs.write_file(Path::new(DIR).join(INCARNATION_FILE), bad);
            assert!(
                matches!(
                    load_or_create(&fs, Path::new(DIR)),
                    Err(Error::BadIncarnation { .. })
                ),
                "{bad:?} was taken"
            );
        }
    }

    proptest! {
        #[test]
        fn text_round_trips(bytes in any::<[u8; 16]>()) {
            let i = Incarnation(bytes);
            let text = i.to_string();
            prop_assert_eq!(text.len(), 32);
            prop_assert_eq!(text.parse::<Incarnation>(), Ok(i));
        }

        #[test]
        fn parsing_any_text_never_panics(s in "\\PC{0,40}") {
            if let Ok(i) = s.parse::<Incarnation>() {
                prop_assert_eq!(i.to_string(), s);
            }
        }
    }
}
