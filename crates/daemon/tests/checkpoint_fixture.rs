//! The committed checkpoint of each format version reads back to what it
//! was written from, and this build writes version 1 byte for byte as it
//! was committed: a change to the payload's layout (a field added to
//! `Mount` or `DeviceState`, a reordering) fails here, not at a user's
//! restart.
//!
//! `WEIR_WRITE_FIXTURES=1 cargo test -p weir-daemon --test checkpoint_fixture`
//! writes the fixture again; do that only together with a new version.

use std::path::PathBuf;

use weir_daemon::checkpoint::{Checkpoint, VERSION, decode, encode};
use weir_devices::{DevNum, DeviceState, Previous as DevicesPrevious, PvState, VgState};
use weir_mounts::Previous as MountsPrevious;

/// The mount table of this project's VM, with escapes in paths.
const MOUNTINFO: &[u8] = include_bytes!("../../mounts/tests/fixtures/mountinfo-vm-escapes.txt");

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inventory-v1")
}

/// What the fixture was written from: nothing in it depends on the
/// machine the test runs on.
fn content() -> Checkpoint {
    let mounts = weir_mounts::mountinfo::parse(MOUNTINFO).expect("the fixture parses");
    assert!(mounts.len() > 10);
    let device = |minor: u32, pv: Option<PvState>| DeviceState {
        dev: DevNum { major: 7, minor },
        name: format!("loop{minor}"),
        parent: None,
        partition: false,
        size_bytes: 8 << 20,
        read_only: false,
        removable: Some(false),
        rotational: Some(true),
        backing_file: Some(format!("/var/tmp/pv{minor}.img").into_bytes()),
        model: None,
        serial: None,
        wwid: None,
        diskseq: Some(100 + u64::from(minor)),
        pv,
    };
    let pv = |c: u8| PvState {
        uuid: [c; 32],
        vg_uuid: Some([b'V'; 32]),
        vg_name: "vg0".to_owned(),
    };
    Checkpoint {
        boot_id: "4a0e2a6c-0b8e-4e4e-9d8b-2f0c6b1f7e11".to_owned(),
        written_ns: 1_763_683_200_000_000_000,
        clean: true,
        mounts: Some(MountsPrevious {
            mounts,
            log_index: 1234,
        }),
        devices: Some(DevicesPrevious {
            devices: vec![
                device(0, Some(pv(b'A'))),
                device(1, Some(pv(b'B'))),
                device(2, None),
            ],
            vgs: vec![VgState {
                uuid: [b'V'; 32],
                name: "vg0".to_owned(),
                seqno: 3,
                complete: true,
                missing: 0,
            }],
            log_index: 1240,
        }),
    }
}

#[test]
fn version_1_reads_back_and_is_written_byte_for_byte() {
    assert_eq!(VERSION, 1, "a new version needs its own fixture");
    let c = content();
    let bytes = encode(&c).expect("encode");
    if std::env::var_os("WEIR_WRITE_FIXTURES").is_some() {
        std::fs::write(fixture_path(), &bytes).expect("write the fixture");
    }
    let committed = std::fs::read(fixture_path()).expect("read the committed fixture");
    assert_eq!(decode(&committed).expect("the fixture decodes"), c);
    assert!(
        bytes == committed,
        "this build writes version 1 differently from the committed fixture"
    );
}
