//! Value layouts of the root and directory rows, and the reader every
//! value (buckets too) is decoded with: fixed little-endian fields after a
//! version byte (1), encoded by hand so the bytes on disk are exactly what
//! docs/format.md says, whatever a serialization crate does next.

use crate::error::{Error, Result};
use crate::types::{Attrs, Dir, Timestamp};

/// The byte every value starts with.
pub(crate) const V1: u8 = 1;

/// Directory flags: its times are valid, it has a parent, it is described
/// (`put_dir`; a row without this flag only holds the bucket layout of
/// entries put in a directory never described).
const TIMES_VALID: u8 = 1;
const HAS_PARENT: u8 = 2;
const DESCRIBED: u8 = 4;
/// The most buckets a directory has: 2^31.
pub(crate) const SHIFT_MAX: u8 = 31;
/// Root flags: a build has not finished.
const BUILDING: u8 = 1;

/// A root row's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RootValue {
    pub(crate) building: bool,
    pub(crate) covered: u64,
    pub(crate) dirs: u64,
    pub(crate) entries: u64,
    pub(crate) path: Vec<u8>,
    pub(crate) id: Vec<u8>,
    pub(crate) log_identity: Vec<u8>,
}

/// A directory row's fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DirRow {
    /// What `put_dir` set, if it did.
    pub(crate) dir: Option<Dir>,
    /// How many entries its buckets hold.
    pub(crate) entries: u64,
    /// Its bucket count is `1 << shift`.
    pub(crate) shift: u8,
}

fn put_time(out: &mut Vec<u8>, t: Timestamp) {
    out.extend_from_slice(&t.sec.to_le_bytes());
    out.extend_from_slice(&t.nsec.to_le_bytes());
}

/// Size (u64), mtime, ctime, nlink (u32): 36 bytes.
pub(crate) fn put_attrs(out: &mut Vec<u8>, a: &Attrs) {
    out.extend_from_slice(&a.size.to_le_bytes());
    put_time(out, a.mtime);
    put_time(out, a.ctime);
    out.extend_from_slice(&a.nlink.to_le_bytes());
}

/// Reads fields off the front of a value; any shortfall is corruption of
/// `table`.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    table: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8], table: &'static str) -> Result<Reader<'a>> {
        let mut r = Reader { b, table };
        match r.u8()? {
            V1 => Ok(r),
            _ => Err(r.bad("version byte")),
        }
    }

    pub(crate) fn bad(&self, what: &'static str) -> Error {
        Error::Corrupt {
            table: self.table,
            what,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(self.bad("length"));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(crate) fn time(&mut self) -> Result<Timestamp> {
        let sec = i64::from_le_bytes(self.array()?);
        let nsec = self.u32()?;
        if nsec >= 1_000_000_000 {
            return Err(self.bad("nanoseconds"));
        }
        Ok(Timestamp { sec, nsec })
    }

    pub(crate) fn bytes8(&mut self) -> Result<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }

    fn bytes16(&mut self) -> Result<&'a [u8]> {
        let n = u16::from_le_bytes(self.array()?);
        self.take(usize::from(n))
    }

    pub(crate) fn attrs(&mut self) -> Result<Attrs> {
        Ok(Attrs {
            size: self.u64()?,
            mtime: self.time()?,
            ctime: self.time()?,
            nlink: self.u32()?,
        })
    }

    /// What is left to read.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.b
    }

    pub(crate) fn end(self) -> Result<()> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(self.bad("trailing bytes"))
        }
    }
}

/// `[1][flags][shift][entries u64][mtime][ctime][len][parent][len][name]`;
/// the parent is empty, and flag 2 clear, for the root directory; a row
/// not described has flags 0, zero times, an empty parent and name.
pub(crate) fn encode_dir_row(row: &DirRow) -> Vec<u8> {
    let (mut flags, times, parent, name) = match &row.dir {
        Some(d) => (
            DESCRIBED | if d.times_valid { TIMES_VALID } else { 0 },
            (d.mtime, d.ctime),
            d.parent.as_deref(),
            d.name.as_slice(),
        ),
        None => (0, Default::default(), None, &[][..]),
    };
    if parent.is_some() {
        flags |= HAS_PARENT;
    }
    let parent = parent.unwrap_or_default();
    let mut out = Vec::with_capacity(37 + parent.len() + name.len());
    out.extend_from_slice(&[V1, flags, row.shift]);
    out.extend_from_slice(&row.entries.to_le_bytes());
    put_time(&mut out, times.0);
    put_time(&mut out, times.1);
    out.push(parent.len() as u8);
    out.extend_from_slice(parent);
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out
}

pub(crate) fn decode_dir_row(b: &[u8]) -> Result<DirRow> {
    let mut r = Reader::new(b, "dirs")?;
    let flags = r.u8()?;
    if flags & !(TIMES_VALID | HAS_PARENT | DESCRIBED) != 0
        || (flags & DESCRIBED == 0 && flags != 0)
    {
        return Err(r.bad("flags"));
    }
    let shift = r.u8()?;
    if shift > SHIFT_MAX {
        return Err(r.bad("bucket count"));
    }
    let entries = r.u64()?;
    let (mtime, ctime) = (r.time()?, r.time()?);
    let parent = r.bytes8()?;
    if (flags & HAS_PARENT != 0) == parent.is_empty() {
        return Err(r.bad("parent"));
    }
    let parent = (flags & HAS_PARENT != 0).then(|| parent.to_vec());
    let name = r.bytes8()?.to_vec();
    r.end()?;
    let dir = (flags & DESCRIBED != 0).then_some(Dir {
        parent,
        name,
        mtime,
        ctime,
        times_valid: flags & TIMES_VALID != 0,
    });
    if dir.is_none() && entries == 0 {
        return Err(Error::Corrupt {
            table: "dirs",
            what: "an empty row",
        });
    }
    Ok(DirRow {
        dir,
        entries,
        shift,
    })
}

/// `[1][flags][covered][dirs][entries]` (u64 each), then the path (u16
/// length), the root id (u8 length), the log identity (u16 length).
pub(crate) fn encode_root(v: &RootValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + v.path.len() + v.id.len() + v.log_identity.len());
    out.extend_from_slice(&[V1, if v.building { BUILDING } else { 0 }]);
    for n in [v.covered, v.dirs, v.entries] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&(v.path.len() as u16).to_le_bytes());
    out.extend_from_slice(&v.path);
    out.push(v.id.len() as u8);
    out.extend_from_slice(&v.id);
    out.extend_from_slice(&(v.log_identity.len() as u16).to_le_bytes());
    out.extend_from_slice(&v.log_identity);
    out
}

pub(crate) fn decode_root(b: &[u8]) -> Result<RootValue> {
    let mut r = Reader::new(b, "roots")?;
    let flags = r.u8()?;
    if flags & !BUILDING != 0 {
        return Err(r.bad("flags"));
    }
    let (covered, dirs, entries) = (r.u64()?, r.u64()?, r.u64()?);
    let path = r.bytes16()?.to_vec();
    let id = r.bytes8()?.to_vec();
    let log_identity = r.bytes16()?.to_vec();
    r.end()?;
    Ok(RootValue {
        building: flags & BUILDING != 0,
        covered,
        dirs,
        entries,
        path,
        id,
        log_identity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let t = Timestamp {
            sec: -5,
            nsec: 999_999_999,
        };
        for dir in [
            Some(Dir {
                parent: None,
                name: vec![],
                mtime: t,
                ctime: t,
                times_valid: true,
            }),
            Some(Dir {
                parent: Some(vec![9; 3]),
                name: b"\n\xff".to_vec(),
                mtime: t,
                ctime: t,
                times_valid: false,
            }),
            None,
        ] {
            let row = DirRow {
                dir,
                entries: 1 << 40,
                shift: 31,
            };
            assert_eq!(decode_dir_row(&encode_dir_row(&row)).unwrap(), row);
        }
        let v = RootValue {
            building: true,
            covered: 7,
            dirs: 1,
            entries: 2,
            path: b"/srv".to_vec(),
            id: vec![4; 20],
            log_identity: b"inc-1".to_vec(),
        };
        assert_eq!(decode_root(&encode_root(&v)).unwrap(), v);
    }

    #[test]
    fn refuses_damage() {
        let row = encode_dir_row(&DirRow {
            dir: None,
            entries: 3,
            shift: 1,
        });
        assert!(decode_dir_row(&row).is_ok());
        assert!(decode_dir_row(&row[..row.len() - 1]).is_err());
        let mut v2 = row.clone();
        v2[0] = 2;
        assert!(decode_dir_row(&v2).is_err());
        let mut shift = row.clone();
        shift[2] = 32;
        assert!(decode_dir_row(&shift).is_err());
        let mut valid_undescribed = row.clone();
        valid_undescribed[1] = TIMES_VALID;
        assert!(decode_dir_row(&valid_undescribed).is_err());
        let mut long = row;
        long.push(0);
        assert!(decode_dir_row(&long).is_err());
        assert!(decode_dir_row(&[]).is_err());
        assert!(decode_root(&[1]).is_err());
    }
}
