//! Property tests of the codec, the type masks, the segment footer, and of
//! the whole log against a model.
//!
//! The codec is the one place where outside bytes become records, so its
//! properties are checked for arbitrary inputs: every record round-trips,
//! every single-byte corruption is caught, and anything that decodes
//! re-encodes to the very same bytes (there is exactly one encoding of a
//! record). The log-level property drives random appends, syncs, reopens and
//! reads over small segments and compares every read with a model.

use std::sync::Arc;

use proptest::prelude::*;
use weir_log::codec::{self, DecodeError, check_frame, decode, encode, encoded_len};
use weir_log::mem::MemFs;
use weir_log::segment::{Footer, HEADER_LEN};
use weir_log::{Field, Log, LogRecord, Options, Reader, Record, RecordType, TypeMask};

/// An owned record, from which a borrowed [`Record`] is made.
#[derive(Debug, Clone)]
struct Owned {
    kind: u16,
    flags: u16,
    target: Vec<u8>,
    parent: Vec<u8>,
    name: Vec<u8>,
    fields: Vec<(String, Vec<u8>)>,
}

impl Owned {
    fn with<R>(&self, f: impl FnOnce(&Record<'_>) -> R) -> R {
        let fields: Vec<Field<'_>> = self
            .fields
            .iter()
            .map(|(k, v)| Field { key: k, value: v })
            .collect();
        let r = Record::new(RecordType(self.kind))
            .flags(self.flags)
            .target(&self.target)
            .parent(&self.parent)
            .name(&self.name)
            .fields(&fields);
        f(&r)
    }

    fn read_back(&self, index: u64, time_ns: u64) -> LogRecord {
        LogRecord {
            index,
            time_ns,
            kind: RecordType(self.kind),
            flags: self.flags,
            target: self.target.clone(),
            parent: self.parent.clone(),
            name: self.name.clone(),
            fields: self.fields.clone(),
        }
    }
}

/// The record as it was read, to be encoded again.
fn owned_of(r: &LogRecord) -> Owned {
    Owned {
        kind: r.kind.0,
        flags: r.flags,
        target: r.target.clone(),
        parent: r.parent.clone(),
        name: r.name.clone(),
        fields: r.fields.clone(),
    }
}

fn kind() -> impl Strategy<Value = u16> {
    let builtin: Vec<u16> = RecordType::builtin().map(|(_, t)| t.0).collect();
    prop_oneof![proptest::sample::select(builtin), any::<u16>()]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn record() -> impl Strategy<Value = Owned> {
    let field = ("(?s).{0,24}", bytes(200));
    (
        kind(),
        any::<u16>(),
        bytes(300),
        bytes(300),
        bytes(300),
        proptest::collection::vec(field, 0..20),
    )
        .prop_map(|(kind, flags, target, parent, name, fields)| Owned {
            kind,
            flags,
            target,
            parent,
            name,
            fields,
        })
}

/// Recomputes the CRC of a frame whose length word is right.
fn fix_crc(frame: &mut [u8]) {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&frame[0..4]), &frame[8..]);
    frame[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Whatever decodes must re-encode to exactly the bytes it came from, and
/// `check_frame` must agree with `decode`.
fn assert_canonical(buf: &[u8]) -> Result<(), TestCaseError> {
    let checked = check_frame(buf).map(|f| (f.len, f.index));
    match decode(buf) {
        Ok((r, n)) => {
            prop_assert!(n <= buf.len());
            prop_assert_eq!(checked, Ok((n, r.index)));
            let again = owned_of(&r)
                .with(|x| encode(x, r.index, r.time_ns))
                .unwrap();
            prop_assert_eq!(&again[..], &buf[..n]);
            // The borrowed view holds the same parts, each field found.
            let view = check_frame(buf).unwrap().record();
            prop_assert_eq!(view.to_record(), r.clone());
            for (k, _) in &r.fields {
                prop_assert_eq!(view.field(k), r.field(k));
                prop_assert_eq!(r.view().field(k), r.field(k));
            }
            prop_assert_eq!(view.field("no such key"), None);
        }
        Err(e) => prop_assert_eq!(checked, Err(e)),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn codec_round_trip(r in record(), index in any::<u64>(), time in any::<u64>(), tail in bytes(64)) {
        let len = r.with(encoded_len).unwrap();
        let frame = r.with(|x| encode(x, index, time)).unwrap();
        prop_assert_eq!(frame.len(), len);
        let (back, n) = decode(&frame).unwrap();
        prop_assert_eq!(n, len);
        prop_assert_eq!(&back, &r.read_back(index, time));
        // Bytes after the frame do not change what it decodes to.
        let mut more = frame.clone();
        more.extend_from_slice(&tail);
        prop_assert_eq!(decode(&more).unwrap(), (back, len));
    }

    #[test]
    fn any_single_byte_corruption_is_rejected(
        r in record(), index in any::<u64>(), at in any::<prop::sample::Index>(), xor in 1..=255u8,
    ) {
        let mut frame = r.with(|x| encode(x, index, 7)).unwrap();
        let at = at.index(frame.len());
        frame[at] ^= xor;
        // CRC32C catches every burst of up to 32 bits; a changed length word
        // makes the frame either truncated or a different message whose
        // stored CRC would have to collide.
        let res = decode(&frame);
        prop_assert!(res.is_err(), "corruption at byte {} accepted: {:?}", at, res);
    }

    #[test]
    fn arbitrary_bytes_decode_canonically(buf in bytes(400)) {
        assert_canonical(&buf)?;
    }

    /// Arbitrary bytes behind a correct length word and CRC: this drives the
    /// layout checks, which random bytes would never reach.
    #[test]
    fn arbitrary_bodies_with_valid_crc_decode_canonically(
        mut buf in proptest::collection::vec(any::<u8>(), codec::HEADER_LEN..400),
        small_parts in any::<bool>(),
    ) {
        if small_parts {
            // Make the part lengths plausible so that some frames decode.
            for b in &mut buf[28..36] {
                *b %= 4;
            }
            for k in [29, 31, 33, 35] {
                buf[k] = 0;
            }
        }
        let len = buf.len() as u32;
        buf[0..4].copy_from_slice(&len.to_le_bytes());
        fix_crc(&mut buf);
        assert_canonical(&buf)?;
    }

    /// A valid frame whose parts were rearranged, with the CRC fixed: it is
    /// either rejected or it is exactly what re-encoding produces.
    #[test]
    fn mutated_frames_with_valid_crc_decode_canonically(
        r in record(), at in any::<prop::sample::Index>(), val in any::<u8>(),
    ) {
        let mut frame = r.with(|x| encode(x, 3, 4)).unwrap();
        let at = 8 + at.index(frame.len() - 8);
        frame[at] = val;
        fix_crc(&mut frame);
        assert_canonical(&frame)?;
    }

    #[test]
    fn mask_display_and_ranges_round_trip(
        spans in proptest::collection::vec((any::<u16>(), 0..300u16), 0..8),
        names in proptest::collection::vec(kind(), 0..6),
        invert in any::<bool>(),
    ) {
        let mut m = TypeMask::none();
        for (a, n) in spans {
            for c in a..=a.saturating_add(n) {
                m.insert(RecordType(c));
            }
        }
        for c in names {
            m.insert(RecordType(c));
        }
        if invert {
            let mut inv = TypeMask::all();
            for (a, b) in m.ranges() {
                for c in a..=b {
                    inv.remove(RecordType(c));
                }
            }
            m = inv;
        }
        let shown = m.to_string();
        prop_assert_eq!(TypeMask::parse(&shown).unwrap(), m.clone(), "display {:?}", shown);
        prop_assert_eq!(TypeMask::from_ranges(&m.ranges()), m);
    }

    #[test]
    fn footer_round_trip_and_corruption(
        first in 1..u64::MAX / 4,
        count in 0..5000u64,
        times in (any::<u64>(), any::<u64>()),
        steps in proptest::collection::vec((1..50u64, 1..70_000u64), 0..12),
        slack in 0..3u64,
        at in any::<prop::sample::Index>(),
        xor in 1..=255u8,
    ) {
        // Entries strictly increasing in index and offset, inside the data.
        let last = first + count - 1;
        let mut entries = Vec::new();
        let (mut i, mut o) = (first, HEADER_LEN);
        for (di, d_off) in steps {
            if count == 0 || i > last {
                break;
            }
            entries.push((i, o));
            i += di;
            o += d_off;
        }
        let data_end = o + 1;
        let offset = data_end.div_ceil(4096) * 4096 + slack * 4096;
        let f = Footer {
            first_index: first,
            last_index: last,
            data_end,
            first_time_ns: times.0,
            last_time_ns: times.1,
            entries,
        };
        let b = f.encode(offset);
        prop_assert_eq!(b.len() as u64, f.encoded_len());
        prop_assert_eq!(Footer::decode(&b, offset).unwrap(), f.clone());
        prop_assert!(Footer::decode(&b, offset + 4096).is_err());
        let mut bad = b.clone();
        let at = at.index(bad.len());
        bad[at] ^= xor;
        prop_assert!(Footer::decode(&bad, offset).is_err(), "corrupt byte {} of {} accepted", at, bad.len());
    }
}

/// One step of the log-level model test.
#[derive(Debug, Clone)]
enum Op {
    /// Appends `count` records of about `size` bytes each.
    Append {
        count: usize,
        size: usize,
        kind: u16,
    },
    /// Appends one record durably.
    Durable,
    /// `log.sync()`.
    Sync,
    /// Close (or just drop) and reopen.
    Reopen { close: bool },
    /// Reads from a point given as a fraction of the length.
    Read { from_permille: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1..400usize, 0..1500usize, kind()).prop_map(|(count, size, kind)| Op::Append { count, size, kind }),
        1 => Just(Op::Durable),
        1 => Just(Op::Sync),
        1 => any::<bool>().prop_map(|close| Op::Reopen { close }),
        3 => (0..=1000u64).prop_map(|from_permille| Op::Read { from_permille }),
    ]
}

/// The payload of model record `i`: reproducible from `i` alone.
fn payload(i: u64, size: usize) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..size)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn check_read(
    log: &Log,
    model: &[(u16, Vec<u8>)],
    from: u64,
    must_be_complete: bool,
) -> Result<(), TestCaseError> {
    let owned: Vec<LogRecord> = log.reader(from).collect::<Result<_, _>>().unwrap();
    // The borrowed reading must see the same.
    let mut lent = Vec::new();
    log.reader(from)
        .for_each_record(|r| lent.push(r.to_record()))
        .unwrap();
    let want = &model[(from - 1) as usize..];
    for got in [owned, lent] {
        prop_assert!(got.len() <= want.len());
        if must_be_complete {
            prop_assert_eq!(got.len(), want.len());
        }
        for (k, r) in got.iter().enumerate() {
            prop_assert_eq!(r.index, from + k as u64);
            prop_assert_eq!(r.kind, RecordType(want[k].0));
            prop_assert_eq!(&r.name, &want[k].1);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn log_matches_model(ops in proptest::collection::vec(op(), 1..32)) {
        let dir = tempfile::tempdir().unwrap();
        let fs = Arc::new(MemFs::new());
        let opts = || Options::default().segment_size(64 * 1024).fs(fs.clone());
        let mut log = Some(Log::open(dir.path(), opts()).unwrap());
        let mut model: Vec<(u16, Vec<u8>)> = Vec::new();
        for op in ops {
            let l = log.as_ref().unwrap();
            match op {
                Op::Append { count, size, kind } => {
                    for _ in 0..count {
                        let i = model.len() as u64 + 1;
                        let name = payload(i, size);
                        let a = l.append(&Record::new(RecordType(kind)).name(&name)).unwrap();
                        prop_assert_eq!(a.index(), i);
                        model.push((kind, name));
                    }
                }
                Op::Durable => {
                    let i = model.len() as u64 + 1;
                    let name = payload(i, 10);
                    let d = l.append_durable(&Record::new(RecordType::MARK).name(&name)).unwrap();
                    prop_assert_eq!(d.index(), i);
                    model.push((RecordType::MARK.0, name));
                    check_read(l, &model, i, true)?;
                }
                Op::Sync => {
                    let d = l.sync().unwrap();
                    prop_assert_eq!(d.map(|d| d.index()), (!model.is_empty()).then_some(model.len() as u64));
                }
                Op::Reopen { close } => {
                    let old = log.take().unwrap();
                    if close {
                        old.close().unwrap();
                    } else {
                        drop(old);
                    }
                    let l = Log::open(dir.path(), opts()).unwrap();
                    prop_assert_eq!(l.last_index(), model.len() as u64);
                    prop_assert!(l.recovery().torn.is_none(), "{:?}", l.recovery());
                    log = Some(l);
                }
                Op::Read { from_permille } => {
                    let from = 1 + model.len() as u64 * from_permille / 1000;
                    check_read(l, &model, from, false)?;
                    l.sync().unwrap();
                    check_read(l, &model, from, true)?;
                    // Another process's view of the same directory.
                    let other: Vec<LogRecord> = Reader::open_dir_with(fs.clone(), dir.path(), from)
                        .collect::<Result<_, _>>()
                        .unwrap();
                    prop_assert_eq!(other.len() as u64, model.len() as u64 + 1 - from);
                    prop_assert_eq!(other.last().map(|r| &r.name), model.last().filter(|_| !other.is_empty()).map(|m| &m.1));
                }
            }
        }
        let l = log.take().unwrap();
        l.sync().unwrap();
        check_read(&l, &model, 1, true)?;
        l.close().unwrap();
        let v = weir_log::verify(&*fs, dir.path(), |_, _| {}).unwrap();
        prop_assert!(v.problem.is_none(), "{:?}", v);
        prop_assert_eq!(v.records, model.len() as u64);
    }
}

#[test]
fn empty_mask_round_trips() {
    // Regression: the empty mask used to display as "", which parses as "all".
    let none = TypeMask::none();
    assert_eq!(TypeMask::parse(&none.to_string()).unwrap(), none);
}

#[test]
fn decode_error_kinds() {
    assert_eq!(decode(&[0; 40]).unwrap_err(), DecodeError::Zero);
    assert!(matches!(
        decode(&[1, 0]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut f = encode(&Record::new(RecordType::CREAT).name(b"x"), 1, 2).unwrap();
    f[0] = 200;
    assert!(matches!(decode(&f), Err(DecodeError::Truncated { .. })));
}

#[test]
fn footer_with_unknown_version_is_refused() {
    // Regression: the trailer's version word is outside the footer CRC and
    // used to be ignored, so a footer of any version was accepted.
    let f = Footer {
        first_index: 1,
        last_index: 0,
        data_end: HEADER_LEN,
        ..Footer::default()
    };
    let mut b = f.encode(HEADER_LEN);
    assert_eq!(Footer::decode(&b, HEADER_LEN).unwrap(), f);
    let v = b.len() - 12;
    b[v] = 2;
    assert!(Footer::decode(&b, HEADER_LEN).is_err());
}

#[test]
fn reader_refuses_unknown_segment_version() {
    // Regression: `Reader` checked only the header's base index, so a reader
    // in another process read segments of any format version.
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
    log.append_durable(&Record::new(RecordType::CREAT).name(b"a"))
        .unwrap();
    log.close().unwrap();
    let seg = weir_log::segment::segment_path(dir.path(), 1);
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[0..40]);
    bytes[40..44].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&seg, &bytes).unwrap();
    let first = Reader::open_dir(dir.path(), 1).next().unwrap();
    assert!(
        matches!(
            first,
            Err(weir_log::Error::UnsupportedVersion { found: 2, .. })
        ),
        "{first:?}"
    );
}

#[test]
fn readers_do_not_reread_the_segment_for_every_record() {
    // Regression: `Reader` started a fresh scan (and a fresh 256 KiB read)
    // for every record, so reading a log cost O(records × chunk): 200k
    // records of 100 bytes took 2.8 s instead of 40 ms.
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(MemFs::new());
    let log = Log::open(dir.path(), Options::default().fs(fs.clone())).unwrap();
    let name = [7u8; 64];
    for _ in 0..20_000 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&name))
            .unwrap();
    }
    log.sync().unwrap();
    let data = 20_000 * encoded_len(&Record::new(RecordType::CREAT).name(&name)).unwrap() as u64;
    for dir_reader in [false, true] {
        let before = fs.bytes_read();
        let n = if dir_reader {
            Reader::open_dir_with(fs.clone(), dir.path(), 1).count()
        } else {
            log.reader(1).count()
        };
        assert_eq!(n, 20_000);
        let read = fs.bytes_read() - before;
        assert!(
            read < 8 * data,
            "read {read} bytes to return {data} bytes of records"
        );
    }
}

#[test]
fn reader_reports_an_older_segment_without_footer() {
    // Regression (found by fuzz/read_segment): a reader treated an unsealed
    // segment that is not the newest as the active one. It stopped at its
    // end as if caught up, or served indexes that belong to the next
    // segment, where `verify` reports "not sealed".
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
    let name = [5u8; 400];
    for _ in 0..400 {
        let _ = log
            .append(&Record::new(RecordType::CREAT).name(&name))
            .unwrap();
    }
    log.close().unwrap();
    let first = weir_log::segment::segment_path(dir.path(), 1);
    let bytes = std::fs::read(&first).unwrap();
    let footer_at = u64::from_le_bytes(
        bytes[bytes.len() - 24..bytes.len() - 16]
            .try_into()
            .unwrap(),
    );
    std::fs::write(&first, &bytes[..footer_at as usize]).unwrap();
    let mut got = Vec::new();
    for r in Reader::open_dir(dir.path(), 1) {
        let stop = r.is_err();
        got.push(r);
        if stop {
            break;
        }
    }
    assert!(
        matches!(got.last(), Some(Err(weir_log::Error::Corrupt { .. }))),
        "read {} records and ended with {:?}",
        got.len(),
        got.last().map(|r| r.as_ref().map(|r| r.index))
    );
}

/// A borrowed reading through a mask, over several segments and from the
/// middle, hands over what `next_record` returns, and leaves the reader
/// where `next_record` would: both then follow what is appended next.
#[test]
fn borrowed_reading_matches_owned_reading() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::open(dir.path(), Options::default().segment_size(64 * 1024)).unwrap();
    let append = |from: u64, to: u64| {
        for i in from..to {
            let kind = if i % 3 == 0 {
                RecordType::MARK
            } else {
                RecordType(7)
            };
            let name = payload(i, (i % 200) as usize);
            let v = i.to_string();
            let fields = [weir_log::Field {
                key: "i",
                value: v.as_bytes(),
            }];
            let _ = log
                .append(&Record::new(kind).name(&name).fields(&fields))
                .unwrap();
        }
        log.sync().unwrap();
    };
    append(1, 3000);
    let mark = RecordType::MARK.0;
    let mask = TypeMask::from_ranges(&[(mark, mark)]);
    let mut owned = log.reader(700).with_mask(mask.clone());
    let mut lent = log.reader(700).with_mask(mask);
    // One record out of the owned way first: a queue the borrowed way
    // must serve before scanning.
    let mut got = vec![lent.next_record().unwrap().unwrap()];
    for _ in 0..2 {
        let want: Vec<LogRecord> = std::iter::from_fn(|| owned.next_record().unwrap()).collect();
        lent.for_each_record(|r| {
            assert_eq!(r.field("i"), Some(r.index.to_string().as_bytes()));
            got.push(r.to_record());
        })
        .unwrap();
        assert!(!want.is_empty());
        assert!(want.iter().all(|r| r.kind == RecordType::MARK));
        assert_eq!(got, want);
        assert_eq!(lent.position(), owned.position());
        got.clear();
        append(3000, 3500);
    }
}
