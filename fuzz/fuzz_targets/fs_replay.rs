//! Fuzzes the replay of filesystem records: `weir_fs::record::decode`
//! and `Change::apply`, as a consumer (or a restarting tracker) replays a
//! log that may be damaged or crafted.
//!
//! The input is cut into records: a type (one byte, mapped onto the
//! CREAT ... MTIME codes and a few others), flags (two bytes), then the
//! target, parent and name, and up to four fields, each a length byte and
//! its bytes (field keys from the layout's own names). Ids are drawn from
//! a small set most of the time, so that records meet each other in the
//! tree. Property: decoding never panics, applying never panics, and the
//! tree stays consistent (its count of entries is its listing's).
#![no_main]
#![forbid(unsafe_code)]

use libfuzzer_sys::fuzz_target;
use weir_fs::{ObjectId, Tree};
use weir_log::{LogRecord, RecordType};

const TYPES: [u16; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 14, 17, 0, 70];
const KEYS: [&str; 7] = [
    "type",
    "sparent",
    "sname",
    "exchanged",
    "overwritten",
    "overwritten_last",
    "path",
];

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = usize::from(self.byte()? % 48);
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a.to_vec())
    }
    /// An id: one of eight well-formed ones, or raw bytes.
    fn id(&mut self) -> Option<Vec<u8>> {
        let b = self.byte()?;
        if b & 0x80 == 0 {
            Some(small(b & 7).as_bytes().to_vec())
        } else {
            self.bytes()
        }
    }
}

fn small(n: u8) -> ObjectId {
    let mut b = vec![0, 0, 0, 9, 0, 0, 0, 9, 0, 0, 0, 1];
    b.extend_from_slice(&[n; 8]);
    ObjectId::from_bytes(&b).expect("well-formed")
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut tree = Tree::new(small(0));
    while let Some(t) = input.byte() {
        let kind = RecordType(TYPES[usize::from(t) % TYPES.len()]);
        let (Some(f0), Some(f1)) = (input.byte(), input.byte()) else {
            break;
        };
        let (Some(target), Some(parent), Some(name)) = (input.id(), input.id(), input.bytes())
        else {
            break;
        };
        let mut fields = Vec::new();
        for _ in 0..input.byte().map_or(0, |n| n % 5) {
            let (Some(k), Some(mut v)) = (input.byte(), input.bytes()) else {
                break;
            };
            let key = KEYS[usize::from(k) % KEYS.len()];
            if matches!(key, "sparent" | "exchanged" | "overwritten") && k & 0x80 == 0 {
                v = small(k & 7).hex().into_bytes();
            }
            fields.push((key.to_owned(), v));
        }
        let r = LogRecord {
            index: 1,
            time_ns: 0,
            kind,
            flags: u16::from_be_bytes([f0, f1]),
            target,
            parent,
            name,
            fields,
        };
        if let Some(c) = weir_fs::record::decode::change(&r.view()) {
            let _ = c.apply(&mut tree);
            assert_eq!(tree.len(), tree.listing().len());
        }
    }
});
