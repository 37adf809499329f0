//! The committed checkpoint of each format version reads back to what it
//! was written from, and this build writes the current version byte for
//! byte as it was committed: a change to the payload's layout (a field
//! added to `Mount` or `DeviceState`, a reordering) fails here, not at a
//! user's restart.
//!
//! `WEIR_WRITE_FIXTURES=1 cargo test -p weir-daemon --test checkpoint_fixture`
//! writes the fixture again; do that only together with a new version.

use std::path::PathBuf;

use weir_daemon::checkpoint::{Checkpoint, VERSION, decode, encode};
use weir_devices::{
    DevNum, DeviceState, LvState, Previous as DevicesPrevious, PvState, VgDetail, VgState,
};
use weir_mounts::Previous as MountsPrevious;

/// The mount table of this project's VM, with escapes in paths.
const MOUNTINFO: &[u8] = include_bytes!("../../mounts/tests/fixtures/mountinfo-vm-escapes.txt");

fn fixture_path(version: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/inventory-v{version}"))
}

/// What the version 2 fixture was written from: version 1's, with the
/// VG's details and two LVs.
fn content_v2() -> Checkpoint {
    let mut c = content();
    let lv = |c: u8, name: &str, extents: u64| LvState {
        uuid: [c; 32],
        name: name.to_owned(),
        extents,
        size_bytes: extents << 22,
        segtype: "linear".to_owned(),
        segments: 1,
        status: "READ,WRITE,VISIBLE".to_owned(),
        layout: 0x1234_abcd,
    };
    if let Some(d) = c.devices.as_mut() {
        d.vgs[0].detail = Some(VgDetail {
            pvs: vec![[b'A'; 32], [b'B'; 32]],
            extent_count: 6,
            free_count: 3,
            extent_size: 4 << 20,
            metadata_copies: 0,
            status: "RESIZEABLE,READ,WRITE".to_owned(),
            lvs: vec![lv(b'L', "lv0", 2), lv(b'M', "lv1", 1)],
        });
    }
    c
}

/// What the version 1 fixture was written from: nothing in it depends on
/// the machine the test runs on. Read by this build, its VGs have no
/// details.
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
                detail: None,
            }],
            log_index: 1240,
        }),
    }
}

#[test]
fn version_1_reads_back_without_vg_details() {
    let committed = std::fs::read(fixture_path(1)).expect("read the committed fixture");
    assert_eq!(decode(&committed).expect("the fixture decodes"), content());
}

#[test]
fn version_2_reads_back_and_is_written_byte_for_byte() {
    assert_eq!(VERSION, 2, "a new version needs its own fixture");
    let c = content_v2();
    let bytes = encode(&c).expect("encode");
    if std::env::var_os("WEIR_WRITE_FIXTURES").is_some() {
        std::fs::write(fixture_path(2), &bytes).expect("write the fixture");
    }
    let committed = std::fs::read(fixture_path(2)).expect("read the committed fixture");
    assert_eq!(decode(&committed).expect("the fixture decodes"), c);
    assert!(
        bytes == committed,
        "this build writes version 2 differently from the committed fixture"
    );
}
