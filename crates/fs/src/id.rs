//! Object ids: what a record's `target` and `parent` hold for a file or a
//! directory.
//!
//! An id is the filesystem's id as fanotify reports it (`fsid`, two 32-bit
//! words) followed by the kernel's file handle (its type and its opaque
//! bytes). A handle names one inode for its whole life, through renames,
//! and a filesystem never hands it to another inode (the handle carries the
//! inode's generation), so an id is never reused. The layout is fixed:
//!
//! | bytes | what |
//! |---|---|
//! | 0..4, 4..8 | `fsid.val[0]`, `fsid.val[1]`, big-endian |
//! | 8..12 | `handle_type`, big-endian |
//! | 12.. | the handle's bytes (ext4 8, xfs 12, tmpfs 12, btrfs 20) |

use std::fmt;
use std::hash::{Hash, Hasher};

use weir_sys::fanotify::fid::{Fid, FileHandle, MAX_HANDLE_SZ};

/// The bytes before the handle.
pub(crate) const HEADER: usize = 12;

/// An object's id: fsid, handle type and handle bytes, as one byte string.
///
/// Ids of the filesystems weir watches are at most 32 bytes (btrfs), and
/// the tracker copies several per event, so they are held inline; a larger
/// handle (up to `MAX_HANDLE_SZ`) goes to the heap.
#[derive(Clone)]
pub struct ObjectId(Repr);

/// The bytes an id holds inline.
const INLINE: usize = 38;

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl PartialEq for ObjectId {
    fn eq(&self, other: &ObjectId) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ObjectId {}

impl Hash for ObjectId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialOrd for ObjectId {
    fn partial_cmp(&self, other: &ObjectId) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectId {
    fn cmp(&self, other: &ObjectId) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl ObjectId {
    /// The id of the object a fanotify file-id record names.
    pub fn from_fid(f: &Fid<'_>) -> ObjectId {
        ObjectId::new(f.fsid, f.handle_type, f.handle)
    }

    /// The id of `handle` on the filesystem whose events carry `fsid`.
    pub fn from_handle(fsid: [u32; 2], handle: &FileHandle) -> ObjectId {
        ObjectId::new(fsid, handle.handle_type(), handle.bytes())
    }

    fn new(fsid: [u32; 2], handle_type: i32, handle: &[u8]) -> ObjectId {
        let mut head = [0u8; HEADER];
        head[0..4].copy_from_slice(&fsid[0].to_be_bytes());
        head[4..8].copy_from_slice(&fsid[1].to_be_bytes());
        head[8..12].copy_from_slice(&handle_type.to_be_bytes());
        ObjectId::from_parts(&head, handle)
    }

    /// The id whose first [`HEADER`] bytes are `head` and the rest
    /// `handle` (at most `MAX_HANDLE_SZ`): how a tree gives back an id it
    /// holds in parts.
    pub(crate) fn from_parts(head: &[u8; HEADER], handle: &[u8]) -> ObjectId {
        let n = HEADER + handle.len();
        if n <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..HEADER].copy_from_slice(head);
            bytes[HEADER..n].copy_from_slice(handle);
            ObjectId(Repr::Inline {
                len: n as u8,
                bytes,
            })
        } else {
            let mut b = Vec::with_capacity(n);
            b.extend_from_slice(head);
            b.extend_from_slice(handle);
            ObjectId(Repr::Heap(b.into_boxed_slice()))
        }
    }

    /// The id in two parts: the fsid and handle type, and the handle.
    pub(crate) fn parts(&self) -> (&[u8; HEADER], &[u8]) {
        let (head, handle) = self.as_bytes().split_at(HEADER);
        // Every constructor puts a whole header first.
        let head = head
            .try_into()
            .unwrap_or_else(|_| unreachable!("a header first"));
        (head, handle)
    }

    fn of_bytes(b: &[u8]) -> ObjectId {
        if b.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..b.len()].copy_from_slice(b);
            ObjectId(Repr::Inline {
                len: b.len() as u8,
                bytes,
            })
        } else {
            ObjectId(Repr::Heap(b.to_vec().into_boxed_slice()))
        }
    }

    /// An id read back from a record; `None` unless it has the layout above
    /// (a header and at most `MAX_HANDLE_SZ` handle bytes).
    pub fn from_bytes(b: &[u8]) -> Option<ObjectId> {
        (b.len() >= HEADER && b.len() - HEADER <= MAX_HANDLE_SZ).then(|| ObjectId::of_bytes(b))
    }

    /// The id's bytes, as records hold them.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Repr::Heap(b) => b,
        }
    }

    /// The filesystem id part.
    pub fn fsid(&self) -> [u32; 2] {
        let b = self.as_bytes();
        let w = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        [w(0), w(4)]
    }

    /// The file handle, for `open_by_handle_at`.
    pub fn handle(&self) -> FileHandle {
        let b = self.as_bytes();
        let t = i32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        // The constructors bound the length, so this cannot fail.
        FileHandle::new(t, &b[HEADER..]).unwrap_or_else(|| unreachable!("bounded at construction"))
    }

    /// Lowercase hex of the bytes, as fields that hold an id write it.
    pub fn hex(&self) -> String {
        let bytes = self.as_bytes();
        let mut s = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 15)]));
        }
        s
    }

    /// The id that [`ObjectId::hex`] wrote; `None` for anything else.
    pub fn from_hex(s: &[u8]) -> Option<ObjectId> {
        if !s.len().is_multiple_of(2) {
            return None;
        }
        let nib = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        // Decoded on the stack: every record of a move holds one or two.
        let mut buf = [0u8; HEADER + MAX_HANDLE_SZ];
        let out = buf.get_mut(..s.len() / 2)?;
        for (o, p) in out.iter_mut().zip(s.chunks_exact(2)) {
            *o = nib(p[0])? << 4 | nib(p[1])?;
        }
        ObjectId::from_bytes(out)
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_layout_is_fsid_type_handle() {
        let h = FileHandle::new(0x81, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let id = ObjectId::from_handle([0x0102_0304, 0x0506_0708], &h);
        assert_eq!(
            id.as_bytes(),
            [
                1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0x81, 1, 2, 3, 4, 5, 6, 7, 8
            ]
        );
        assert_eq!(id.fsid(), [0x0102_0304, 0x0506_0708]);
        assert_eq!(id.handle(), h);
        assert_eq!(id.hex(), "0102030405060708000000810102030405060708");
    }

    #[test]
    fn malformed_bytes_are_no_id() {
        assert!(ObjectId::from_bytes(&[0; 11]).is_none());
        assert!(ObjectId::from_bytes(&[0; HEADER + MAX_HANDLE_SZ + 1]).is_none());
        assert!(ObjectId::from_hex(b"0").is_none());
        assert!(ObjectId::from_hex(b"zz").is_none());
        assert!(ObjectId::from_hex(b"AB").is_none());
    }

    proptest! {
        #[test]
        fn hex_and_bytes_round_trip(fsid in any::<[u32; 2]>(), t in any::<i32>(),
                                    h in proptest::collection::vec(any::<u8>(), 0..=MAX_HANDLE_SZ)) {
            let id = ObjectId::from_handle(fsid, &FileHandle::new(t, &h).unwrap());
            prop_assert_eq!(ObjectId::from_bytes(id.as_bytes()), Some(id.clone()));
            prop_assert_eq!(ObjectId::from_hex(id.hex().as_bytes()), Some(id.clone()));
            let back = id.handle();
            prop_assert_eq!(back.bytes(), &h[..]);
            prop_assert_eq!(id.fsid(), fsid);
        }

        #[test]
        fn any_bytes_decode_or_refuse(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            match ObjectId::from_bytes(&b) {
                Some(id) => { prop_assert_eq!(id.as_bytes(), &b[..]); let _ = id.handle(); }
                None => prop_assert!(b.len() < HEADER || b.len() > HEADER + MAX_HANDLE_SZ),
            }
        }
    }
}
