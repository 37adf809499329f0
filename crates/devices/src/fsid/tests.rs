use proptest::prelude::*;

use super::*;

const UUID: [u8; 16] = [
    0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
];
const UUID_TEXT: &str = "12345678-9abc-def0-0123-456789abcdef";

fn ext_image(compat: u32, incompat: u32, ro_compat: u32, uuid: &[u8; 16], label: &[u8]) -> Vec<u8> {
    let mut img = vec![0u8; 64 * 1024];
    let sb = &mut img[1024..2048];
    sb[0x38..0x3a].copy_from_slice(&0xEF53u16.to_le_bytes());
    sb[0x5c..0x60].copy_from_slice(&compat.to_le_bytes());
    sb[0x60..0x64].copy_from_slice(&incompat.to_le_bytes());
    sb[0x64..0x68].copy_from_slice(&ro_compat.to_le_bytes());
    sb[0x68..0x78].copy_from_slice(uuid);
    sb[0x78..0x78 + label.len()].copy_from_slice(label);
    if ro_compat & EXT_RO_COMPAT_METADATA_CSUM != 0 {
        let crc = crc32c_raw(!0, &sb[..0x3fc]);
        sb[0x3fc..0x400].copy_from_slice(&crc.to_le_bytes());
    }
    img
}

fn xfs_image(uuid: &[u8; 16], label: &[u8], v5: bool) -> Vec<u8> {
    let mut img = vec![0u8; 64 * 1024];
    let sb = &mut img[..512];
    sb[..4].copy_from_slice(b"XFSB");
    sb[4..8].copy_from_slice(&4096u32.to_be_bytes());
    sb[32..48].copy_from_slice(uuid);
    sb[88..92].copy_from_slice(&4u32.to_be_bytes());
    sb[100..102].copy_from_slice(&(if v5 { 0xb4a5u16 } else { 0xb4a4 }).to_be_bytes());
    sb[102..104].copy_from_slice(&512u16.to_be_bytes());
    sb[104..106].copy_from_slice(&512u16.to_be_bytes());
    sb[106..108].copy_from_slice(&8u16.to_be_bytes());
    sb[108..108 + label.len()].copy_from_slice(label);
    sb[120] = 12;
    sb[121] = 9;
    sb[122] = 9;
    if v5 {
        let crc = crc32c::crc32c(sb);
        sb[224..228].copy_from_slice(&crc.to_le_bytes());
    }
    img
}

fn btrfs_image(uuid: &[u8; 16], label: &[u8]) -> Vec<u8> {
    let mut img = vec![0u8; 128 * 1024];
    let sb = &mut img[64 * 1024..68 * 1024];
    sb[0x20..0x30].copy_from_slice(uuid);
    sb[0x40..0x48].copy_from_slice(b"_BHRfS_M");
    sb[0x12b..0x12b + label.len()].copy_from_slice(label);
    let crc = crc32c::crc32c(&sb[0x20..]);
    sb[..4].copy_from_slice(&crc.to_le_bytes());
    img
}

fn swap_image(page: usize, uuid: &[u8; 16], label: &[u8]) -> Vec<u8> {
    let mut img = vec![0u8; 128 * 1024];
    img[page - 10..page].copy_from_slice(b"SWAPSPACE2");
    let h = &mut img[1024..];
    h[0..4].copy_from_slice(&1u32.to_le_bytes());
    h[4..8].copy_from_slice(&31u32.to_le_bytes());
    h[0x0c..0x1c].copy_from_slice(uuid);
    h[0x1c..0x1c + label.len()].copy_from_slice(label);
    img
}

/// A FAT32 volume: 32 reserved sectors, two FATs of one sector, clusters
/// of one sector, the root at cluster 2 (sector 34) holding `root_label`
/// in its second entry; the boot sector's label `label`.
fn vfat32_image(serial: [u8; 4], label: &[u8; 11], root_label: Option<&[u8; 11]>) -> Vec<u8> {
    let mut img = vec![0u8; 64 * 1024];
    img[0x24..0x28].copy_from_slice(&1u32.to_le_bytes());
    img[0x2c..0x30].copy_from_slice(&2u32.to_le_bytes());
    // The FAT: cluster 2 ends its chain.
    img[32 * 512 + 8..32 * 512 + 12].copy_from_slice(&0x0fff_ffffu32.to_le_bytes());
    if let Some(l) = root_label {
        let root = 34 * 512;
        img[root..root + 11].copy_from_slice(b"LONGNAME   ");
        img[root + 11] = 0x0f;
        img[root + 32..root + 43].copy_from_slice(l);
        img[root + 43] = 0x08;
    }
    let bs = &mut img[..512];
    bs[0] = 0xeb;
    bs[0x0b..0x0d].copy_from_slice(&512u16.to_le_bytes());
    bs[0x0d] = 1;
    bs[0x0e..0x10].copy_from_slice(&32u16.to_le_bytes());
    bs[0x10] = 2;
    bs[0x15] = 0xf8;
    bs[0x42] = 0x29;
    bs[0x43..0x47].copy_from_slice(&serial);
    bs[0x47..0x52].copy_from_slice(label);
    bs[0x52..0x5a].copy_from_slice(b"FAT32   ");
    bs[0x1fe] = 0x55;
    bs[0x1ff] = 0xaa;
    img
}

fn id(fstype: &'static str, uuid: Option<&str>, label: Option<&[u8]>) -> Option<FsId> {
    Some(FsId {
        fstype,
        uuid: uuid.map(str::to_owned),
        label: label.map(<[u8]>::to_vec),
    })
}

#[test]
fn ext_types_by_features() {
    let p = |c, i, r| probe(&ext_image(c, i, r, &UUID, b"root")).unwrap();
    assert_eq!(p(0, 0x2, 0x3), id("ext2", Some(UUID_TEXT), Some(b"root")));
    assert_eq!(p(0x4, 0x2, 0x3), id("ext3", Some(UUID_TEXT), Some(b"root")));
    // extents, 64bit, flex_bg: ext4; metadata_csum too (with its CRC).
    assert_eq!(
        p(0x4, 0x2c2, 0x3),
        id("ext4", Some(UUID_TEXT), Some(b"root"))
    );
    assert_eq!(p(0, 0x40, 0x3), id("ext4", Some(UUID_TEXT), Some(b"root")));
    assert_eq!(
        p(0x4, 0x2, 0x403),
        id("ext4", Some(UUID_TEXT), Some(b"root"))
    );
    assert_eq!(p(0x4, 0x8, 0), id("jbd", Some(UUID_TEXT), Some(b"root")));
}

#[test]
fn ext_with_a_bad_checksum_is_not_ext() {
    let mut img = ext_image(0x4, 0x2c2, 0x403, &UUID, b"x");
    img[1024 + 0x78] = b'y';
    assert_eq!(probe(&img).unwrap(), None);
}

#[test]
fn labels_stop_at_nul_are_trimmed_and_bounded() {
    let full = [0xffu8; 16];
    let img = ext_image(0, 0, 0, &[0; 16], &full);
    assert_eq!(probe(&img).unwrap(), id("ext2", None, Some(&full)));
    let img = ext_image(0, 0, 0, &UUID, b"a\0b");
    assert_eq!(probe(&img).unwrap().unwrap().label.unwrap(), b"a");
    let img = ext_image(0, 0, 0, &UUID, b"a b  \t");
    assert_eq!(probe(&img).unwrap().unwrap().label.unwrap(), b"a b");
    let img = ext_image(0, 0, 0, &UUID, b"   ");
    assert_eq!(probe(&img).unwrap().unwrap().label, None);
    let long = [b'x'; 256];
    let img = btrfs_image(&UUID, &long[..255]);
    assert_eq!(probe(&img).unwrap().unwrap().label.unwrap().len(), 255);
}

#[test]
fn xfs_v4_and_v5() {
    for v5 in [false, true] {
        let img = xfs_image(&UUID, b"twelve bytes", v5);
        assert_eq!(
            probe(&img).unwrap(),
            id("xfs", Some(UUID_TEXT), Some(b"twelve bytes"))
        );
    }
    let mut img = xfs_image(&UUID, b"data", true);
    img[110] ^= 1;
    assert_eq!(probe(&img).unwrap(), None, "bad CRC");
}

#[test]
fn btrfs_and_its_checksum() {
    let img = btrfs_image(&UUID, b"pool");
    assert_eq!(
        probe(&img).unwrap(),
        id("btrfs", Some(UUID_TEXT), Some(b"pool"))
    );
    let mut img = img;
    img[64 * 1024 + 0x12b] = b'P';
    assert_eq!(probe(&img).unwrap(), None);
}

#[test]
fn swap_at_each_page_size() {
    for page in [4096, 8192, 16384, 32768, 65536] {
        let img = swap_image(page, &UUID, b"swp");
        assert_eq!(
            probe(&img).unwrap(),
            id("swap", Some(UUID_TEXT), Some(b"swp")),
            "{page}"
        );
    }
    let mut img = swap_image(4096, &UUID, b"swp");
    img[1024 + 0x2c + 32 * 4] = 1;
    assert_eq!(
        probe(&img).unwrap(),
        id("swap", None, None),
        "garbage in the padding"
    );
    let mut img = swap_image(4096, &UUID, b"swp");
    img[1024 + 4] = 0;
    assert_eq!(probe(&img).unwrap(), None, "no last page");
}

#[test]
fn vfat_serial_and_label() {
    let img = vfat32_image(
        [0xef, 0xcd, 0x34, 0x12],
        b"BOOT       ",
        Some(b"ROOT       "),
    );
    assert_eq!(
        probe(&img).unwrap(),
        id("vfat", Some("1234-CDEF"), Some(b"ROOT"))
    );
    // The boot sector's label alone is no LABEL (blkid's LABEL_FATBOOT).
    let img = vfat32_image([0; 4], b"BOOT       ", None);
    assert_eq!(probe(&img).unwrap(), id("vfat", None, None));
    // "NO NAME" in the root directory is a label like any other.
    let img = vfat32_image([1, 0, 0, 0], b"NO NAME    ", Some(b"NO NAME    "));
    assert_eq!(
        probe(&img).unwrap(),
        id("vfat", Some("0000-0001"), Some(b"NO NAME"))
    );
}

#[test]
fn small_and_empty_devices_hold_nothing() {
    for len in [0, 1, 511, 1024, 2047, 4096, 65536 + 100] {
        assert_eq!(probe(&vec![0u8; len]).unwrap(), None, "{len}");
    }
    // An ext superblock cut short by the device's end.
    let img = ext_image(0, 0, 0, &UUID, b"x");
    assert_eq!(probe(&img[..1500]).unwrap(), None);
}

#[test]
fn lvm_members_print_the_pv_uuid_as_lvm_does() {
    let uuid = weir_lvm::Uuid::parse(b"HVjR5jd0tKj9jq2vITB3XQWGSdVQqFEU").unwrap();
    let got = lvm_member(&uuid);
    assert_eq!(got.fstype, "LVM2_member");
    assert_eq!(
        got.uuid.as_deref(),
        Some("HVjR5j-d0tK-j9jq-2vIT-B3XQ-WGSd-VQqFEU")
    );
}

/// The text blkid makes of a label field: bounded, cut at NUL, trimmed.
fn expected_label(field: &[u8]) -> Option<Vec<u8>> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let s = &field[..end.min(MAX_LABEL)];
    // C's isspace: Rust's trim_ascii_end keeps the vertical tab.
    let keep = s
        .iter()
        .rposition(|b| !b" \t\n\x0b\x0c\r".contains(b))
        .map_or(0, |i| i + 1);
    (keep > 0).then(|| s[..keep].to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..70_000)) {
        let _ = probe(&bytes);
        let _ = probe_head(&bytes);
    }

    #[test]
    fn arbitrary_bytes_behind_each_magic_never_panic(
        seed in proptest::collection::vec(any::<u8>(), 70_000),
        which in 0..5u8,
    ) {
        let mut img = seed;
        match which {
            0 => img[1024 + 0x38..1024 + 0x3a].copy_from_slice(&[0x53, 0xef]),
            1 => img[..4].copy_from_slice(b"XFSB"),
            2 => img[65536 + 0x40..65536 + 0x48].copy_from_slice(b"_BHRfS_M"),
            3 => img[4086..4096].copy_from_slice(b"SWAPSPACE2"),
            _ => img[0x52..0x5a].copy_from_slice(b"FAT32   "),
        }
        if let Ok(Some(id)) = probe(&img) {
            prop_assert!(id.label.is_none_or(|l| !l.is_empty() && l.len() <= MAX_LABEL));
        }
    }

    #[test]
    fn ext_round_trips(uuid in any::<[u8; 16]>(), label in any::<[u8; 16]>(), csum in any::<bool>()) {
        let ro = if csum { 0x403 } else { 0x3 };
        let img = ext_image(0x4, 0x2c2, ro, &uuid, &label);
        let got = probe(&img).unwrap().unwrap();
        prop_assert_eq!(got.fstype, "ext4");
        prop_assert_eq!(got.uuid, uuid_text(&uuid));
        prop_assert_eq!(got.label, expected_label(&label));
    }

    #[test]
    fn xfs_round_trips(uuid in any::<[u8; 16]>(), label in any::<[u8; 12]>()) {
        let got = probe(&xfs_image(&uuid, &label, true)).unwrap().unwrap();
        prop_assert_eq!(got.uuid, uuid_text(&uuid));
        prop_assert_eq!(got.label, expected_label(&label));
    }

    #[test]
    fn btrfs_round_trips(uuid in any::<[u8; 16]>(), label in proptest::collection::vec(any::<u8>(), 256)) {
        let got = probe(&btrfs_image(&uuid, &label)).unwrap().unwrap();
        prop_assert_eq!(got.uuid, uuid_text(&uuid));
        prop_assert_eq!(got.label, expected_label(&label));
    }

    #[test]
    fn swap_round_trips(uuid in any::<[u8; 16]>(), label in any::<[u8; 16]>()) {
        let got = probe(&swap_image(4096, &uuid, &label)).unwrap().unwrap();
        prop_assert_eq!(got.uuid, uuid_text(&uuid));
        prop_assert_eq!(got.label, expected_label(&label));
    }

    #[test]
    fn uuids_print_as_blkid_does(uuid in any::<[u8; 16]>()) {
        if let Some(text) = uuid_text(&uuid) {
            prop_assert_eq!(text.len(), 36);
            let hex: String = text.split('-').collect();
            let want: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
            prop_assert_eq!(hex, want);
            let groups: Vec<usize> = text.split('-').map(str::len).collect();
            prop_assert_eq!(groups, vec![8, 4, 4, 4, 12]);
        }
    }
}
