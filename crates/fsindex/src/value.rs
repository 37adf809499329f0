//! Value layouts: fixed little-endian fields after a version byte (1),
//! encoded by hand so the bytes on disk are exactly what docs/format.md
//! says, whatever a serialization crate does next.

use crate::error::{Error, Result};
use crate::types::{Attrs, Dir, Entry, Kind, Timestamp};

/// The byte every value starts with.
const V1: u8 = 1;

/// Entry flags: the attributes follow the id.
const HAS_ATTRS: u8 = 1;
/// Directory flags.
const TIMES_VALID: u8 = 1;
const HAS_PARENT: u8 = 2;
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

fn put_time(out: &mut Vec<u8>, t: Timestamp) {
    out.extend_from_slice(&t.sec.to_le_bytes());
    out.extend_from_slice(&t.nsec.to_le_bytes());
}

/// Reads fields off the front of a value; any shortfall is corruption of
/// `table`.
struct Reader<'a> {
    b: &'a [u8],
    table: &'static str,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8], table: &'static str) -> Result<Reader<'a>> {
        let mut r = Reader { b, table };
        match r.u8()? {
            V1 => Ok(r),
            _ => Err(r.bad("version byte")),
        }
    }

    fn bad(&self, what: &'static str) -> Error {
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

    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn time(&mut self) -> Result<Timestamp> {
        let sec = i64::from_le_bytes(self.array()?);
        let nsec = self.u32()?;
        if nsec >= 1_000_000_000 {
            return Err(self.bad("nanoseconds"));
        }
        Ok(Timestamp { sec, nsec })
    }

    fn bytes8(&mut self) -> Result<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }

    fn bytes16(&mut self) -> Result<&'a [u8]> {
        let n = u16::from_le_bytes(self.array()?);
        self.take(usize::from(n))
    }

    fn end(self) -> Result<()> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(self.bad("trailing bytes"))
        }
    }
}

/// `[1][kind][flags][len][id]` and, with attributes, size (u64), mtime and
/// ctime (i64 seconds, u32 nanoseconds each), nlink (u32).
pub(crate) fn encode_entry(e: &Entry) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + e.id.len() + 36);
    let flags = if e.attrs.is_some() { HAS_ATTRS } else { 0 };
    out.extend_from_slice(&[V1, e.kind.code(), flags, e.id.len() as u8]);
    out.extend_from_slice(&e.id);
    if let Some(a) = e.attrs {
        out.extend_from_slice(&a.size.to_le_bytes());
        put_time(&mut out, a.mtime);
        put_time(&mut out, a.ctime);
        out.extend_from_slice(&a.nlink.to_le_bytes());
    }
    out
}

pub(crate) fn decode_entry(b: &[u8]) -> Result<Entry> {
    let mut r = Reader::new(b, "entries")?;
    let kind = Kind::from_code(r.u8()?).ok_or(r.bad("kind"))?;
    let flags = r.u8()?;
    if flags & !HAS_ATTRS != 0 {
        return Err(r.bad("flags"));
    }
    let id = r.bytes8()?.to_vec();
    if id.is_empty() {
        return Err(r.bad("empty id"));
    }
    let attrs = if flags & HAS_ATTRS != 0 {
        Some(Attrs {
            size: r.u64()?,
            mtime: r.time()?,
            ctime: r.time()?,
            nlink: r.u32()?,
        })
    } else {
        None
    };
    r.end()?;
    Ok(Entry { id, kind, attrs })
}

/// `[1][flags][mtime][ctime][len][parent][len][name]`; the parent is
/// empty, and flag 2 clear, for the root directory.
pub(crate) fn encode_dir(d: &Dir) -> Vec<u8> {
    let parent = d.parent.as_deref().unwrap_or_default();
    let mut out = Vec::with_capacity(28 + parent.len() + d.name.len());
    let mut flags = if d.times_valid { TIMES_VALID } else { 0 };
    if d.parent.is_some() {
        flags |= HAS_PARENT;
    }
    out.extend_from_slice(&[V1, flags]);
    put_time(&mut out, d.mtime);
    put_time(&mut out, d.ctime);
    out.push(parent.len() as u8);
    out.extend_from_slice(parent);
    out.push(d.name.len() as u8);
    out.extend_from_slice(&d.name);
    out
}

pub(crate) fn decode_dir(b: &[u8]) -> Result<Dir> {
    let mut r = Reader::new(b, "dirs")?;
    let flags = r.u8()?;
    if flags & !(TIMES_VALID | HAS_PARENT) != 0 {
        return Err(r.bad("flags"));
    }
    let (mtime, ctime) = (r.time()?, r.time()?);
    let parent = r.bytes8()?;
    if (flags & HAS_PARENT != 0) == parent.is_empty() {
        return Err(r.bad("parent"));
    }
    let parent = (flags & HAS_PARENT != 0).then(|| parent.to_vec());
    let name = r.bytes8()?.to_vec();
    r.end()?;
    Ok(Dir {
        parent,
        name,
        mtime,
        ctime,
        times_valid: flags & TIMES_VALID != 0,
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
        let a = Attrs {
            size: u64::MAX,
            mtime: t,
            ctime: Timestamp::default(),
            nlink: 3,
        };
        for e in [
            Entry {
                id: vec![1; 255],
                kind: Kind::Block,
                attrs: Some(a),
            },
            Entry {
                id: vec![0],
                kind: Kind::Unknown,
                attrs: None,
            },
        ] {
            assert_eq!(decode_entry(&encode_entry(&e)).unwrap(), e);
        }
        for d in [
            Dir {
                parent: None,
                name: vec![],
                mtime: t,
                ctime: t,
                times_valid: true,
            },
            Dir {
                parent: Some(vec![9; 3]),
                name: b"\n\xff".to_vec(),
                mtime: t,
                ctime: t,
                times_valid: false,
            },
        ] {
            assert_eq!(decode_dir(&encode_dir(&d)).unwrap(), d);
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
        let e = encode_entry(&Entry {
            id: vec![1, 2],
            kind: Kind::File,
            attrs: None,
        });
        assert!(decode_entry(&e[..e.len() - 1]).is_err());
        let mut v2 = e.clone();
        v2[0] = 2;
        assert!(decode_entry(&v2).is_err());
        let mut k = e.clone();
        k[1] = 8;
        assert!(decode_entry(&k).is_err());
        let mut long = e;
        long.push(0);
        assert!(decode_entry(&long).is_err());
        assert!(decode_dir(&[]).is_err());
        assert!(decode_root(&[1]).is_err());
    }
}
