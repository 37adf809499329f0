//! The inventory checkpoint file: what is written reads back, atomically;
//! and a damaged, truncated, foreign or newer file is a typed error, never
//! a panic or a huge allocation.

use proptest::prelude::*;
use weir_daemon::checkpoint::{
    self, Checkpoint, CheckpointError, HEADER_LEN, MAGIC, MAX_PAYLOAD, decode, encode,
};
use weir_devices::{DevNum, DeviceState, Previous as DevicesPrevious, PvState, VgState};
use weir_mounts::{BackendChoice, Previous as MountsPrevious};

/// A checkpoint with real content: this machine's mount table and a
/// device inventory with a PV and its VG.
fn sample() -> Checkpoint {
    let mounts = weir_mounts::snapshot(BackendChoice::Mountinfo)
        .expect("read the mount table")
        .mounts;
    assert!(!mounts.is_empty());
    let device = DeviceState {
        dev: DevNum { major: 7, minor: 3 },
        name: "loop3".to_owned(),
        parent: None,
        partition: false,
        size_bytes: 16 << 20,
        read_only: false,
        removable: Some(false),
        rotational: Some(true),
        backing_file: Some(b"/var/tmp/\xffodd.img".to_vec()),
        model: None,
        serial: Some("s1".to_owned()),
        wwid: None,
        diskseq: Some(42),
        pv: Some(PvState {
            uuid: [b'a'; 32],
            vg_uuid: Some([b'b'; 32]),
            vg_name: "vg0".to_owned(),
        }),
    };
    Checkpoint {
        boot_id: "4a0e2a6c-0b8e-4e4e-9d8b-2f0c6b1f7e11".to_owned(),
        written_ns: 1_700_000_000_000_000_000,
        clean: true,
        mounts: Some(MountsPrevious {
            mounts,
            log_index: 77,
        }),
        devices: Some(DevicesPrevious {
            devices: vec![device],
            vgs: vec![VgState {
                uuid: [b'b'; 32],
                name: "vg0".to_owned(),
                seqno: 9,
                complete: true,
                missing: 0,
                detail: None,
            }],
            log_index: 78,
        }),
    }
}

#[test]
fn round_trips_in_memory_and_on_disk() {
    let c = sample();
    let bytes = encode(&c).unwrap();
    assert_eq!(&bytes[..8], &MAGIC);
    assert_eq!(decode(&bytes).unwrap(), c);

    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(checkpoint::FILE_NAME);
    assert!(checkpoint::read(&path).unwrap().is_none(), "none yet");
    checkpoint::write(&path, &c).unwrap();
    assert_eq!(checkpoint::read(&path).unwrap(), Some(c.clone()));

    // A rewrite replaces it whole and leaves no temporary file behind.
    let mut newer = c;
    newer.clean = false;
    newer.mounts = None;
    checkpoint::write(&path, &newer).unwrap();
    assert_eq!(checkpoint::read(&path).unwrap(), Some(newer));
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [checkpoint::FILE_NAME]);
}

#[test]
fn each_kind_of_damage_has_its_error() {
    let good = encode(&sample()).unwrap();
    let with = |at: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        decode(&b).unwrap_err()
    };
    assert!(matches!(
        decode(&good[..10]),
        Err(CheckpointError::TooShort { len: 10 })
    ));
    assert!(matches!(
        decode(b""),
        Err(CheckpointError::TooShort { len: 0 })
    ));
    assert!(matches!(with(0, b"NOTWEIR\0"), CheckpointError::BadMagic));
    assert!(matches!(
        with(8, &3u32.to_le_bytes()),
        CheckpointError::UnknownVersion { version: 3 }
    ));
    assert!(matches!(
        with(8, &0u32.to_le_bytes()),
        CheckpointError::UnknownVersion { version: 0 }
    ));
    assert!(matches!(
        with(16, &u64::MAX.to_le_bytes()),
        CheckpointError::TooLarge { len: u64::MAX }
    ));
    assert!(matches!(
        decode(&good[..good.len() - 1]),
        Err(CheckpointError::LengthMismatch { .. })
    ));
    let mut longer = good.clone();
    longer.push(0);
    assert!(matches!(
        decode(&longer),
        Err(CheckpointError::LengthMismatch { .. })
    ));
    let last = good.len() - 1;
    assert!(matches!(
        with(last, &[good[last] ^ 1]),
        CheckpointError::Crc { .. }
    ));

    // A payload that checks out but does not decode, or has bytes over.
    let framed = |payload: &[u8]| {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&checkpoint::VERSION.to_le_bytes());
        b.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        b.extend_from_slice(payload);
        b
    };
    assert!(matches!(
        decode(&framed(&[0xff; 3])),
        Err(CheckpointError::Payload { .. })
    ));
    let mut payload = good[HEADER_LEN..].to_vec();
    payload.push(0);
    assert!(matches!(
        decode(&framed(&payload)),
        Err(CheckpointError::TrailingBytes { extra: 1 })
    ));
}

#[test]
fn a_huge_file_is_refused_before_it_is_read() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(checkpoint::FILE_NAME);
    let f = std::fs::File::create(&path).unwrap();
    // Sparse: no disk space, and reading it whole would take 256 MiB.
    f.set_len(HEADER_LEN as u64 + MAX_PAYLOAD + 1).unwrap();
    assert!(matches!(
        checkpoint::read(&path),
        Err(CheckpointError::TooLarge { .. })
    ));
    std::fs::write(&path, b"garbage").unwrap();
    assert!(matches!(
        checkpoint::read(&path),
        Err(CheckpointError::TooShort { len: 7 })
    ));
}

#[test]
fn every_truncation_and_every_byte_flip_is_caught() {
    let mut c = sample();
    // Keep it small enough to try every position.
    if let Some(m) = &mut c.mounts {
        m.mounts.truncate(3);
    }
    let good = encode(&c).unwrap();
    for len in 0..good.len() {
        assert!(decode(&good[..len]).is_err(), "truncated to {len}");
    }
    for at in 0..good.len() {
        let mut b = good.clone();
        b[at] ^= 0x5a;
        assert!(decode(&b).is_err(), "byte {at} flipped");
    }
}

fn arb_checkpoint() -> impl Strategy<Value = Checkpoint> {
    (
        ".{0,40}",
        any::<u64>(),
        any::<bool>(),
        proptest::option::of(any::<u64>()),
        proptest::option::of((any::<u64>(), proptest::collection::vec(".{0,8}", 0..4))),
    )
        .prop_map(|(boot_id, written_ns, clean, mounts, devices)| Checkpoint {
            boot_id,
            written_ns,
            clean,
            mounts: mounts.map(|log_index| MountsPrevious {
                mounts: Vec::new(),
                log_index,
            }),
            devices: devices.map(|(log_index, names)| DevicesPrevious {
                devices: Vec::new(),
                vgs: names
                    .into_iter()
                    .enumerate()
                    .map(|(i, name)| VgState {
                        uuid: [b'0' + i as u8; 32],
                        name,
                        seqno: log_index / 2,
                        complete: i % 2 == 0,
                        missing: i as u64,
                        detail: None,
                    })
                    .collect(),
                log_index,
            }),
        })
}

proptest! {
    #[test]
    fn any_checkpoint_round_trips(c in arb_checkpoint()) {
        prop_assert_eq!(decode(&encode(&c).unwrap()).unwrap(), c);
    }

    #[test]
    fn any_bytes_decode_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes);
    }

    /// Random bytes behind a valid header: the checks after the header
    /// (length, CRC, payload) refuse them, or they decode.
    #[test]
    fn headed_garbage_fails_cleanly(payload in proptest::collection::vec(any::<u8>(), 0..512), fix_crc in any::<bool>()) {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&checkpoint::VERSION.to_le_bytes());
        let crc = if fix_crc { crc32c::crc32c(&payload) } else { 0 };
        b.extend_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        b.extend_from_slice(&payload);
        if let Ok(c) = decode(&b) {
            prop_assert!(fix_crc || crc32c::crc32c(&payload) == 0);
            prop_assert_eq!(decode(&encode(&c).unwrap()).unwrap(), c);
        }
    }
}
