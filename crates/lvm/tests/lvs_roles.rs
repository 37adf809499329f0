//! `Assembly::lvs` against what LVM 2.03.16 printed for a VG holding an
//! LV of most kinds (linear, striped, mirror, RAID, thin, cache,
//! writecache, snapshots, a pvmove, ...; see fixtures/lvs/README.md):
//! `lvs -a` with every segment's `lv_attr`, `segtype`, `stripes`,
//! `stripe_size`, start, size, `devices` and `lv_size`, line for line,
//! with all three PVs present and with one missing.

use std::sync::Arc;

use weir_lvm::assembly::{Assembly, DeviceOn, LvReport, PvSeen};
use weir_lvm::meta::parse_vg;

const VG: &str = include_str!("fixtures/lvs/roles.vg");

/// The PVs and the devices LVM saw them on.
const PVS: [(&str, &str); 3] = [
    ("/dev/loop2950", "ETI8bc-U54Q-XscC-V8jE-MSCM-NwYi-pY6LeY"),
    ("/dev/loop2951", "C6BNgU-YaxY-Oc6p-VqOT-bfHj-5uIP-kJrtJr"),
    ("/dev/loop2952", "bQrnyP-aGqk-bIML-35TT-dcms-bRL2-8D270S"),
];

fn assembly(present: &[&str]) -> Assembly<String> {
    let meta = Arc::new(parse_vg(VG.as_bytes()).expect("LVM's own text parses"));
    let mut a = Assembly::new();
    for (dev, uuid) in PVS.iter().filter(|(d, _)| present.contains(d)) {
        a.add(
            (*dev).to_owned(),
            PvSeen {
                uuid: weir_lvm::Uuid::parse(uuid.as_bytes()).unwrap(),
                device_size: 128 << 20,
                pe_start: 1 << 20,
                mda_count: 1,
                mda_in_use: 1,
                vg: Some(meta.clone()),
            },
        );
    }
    a
}

/// The report as `lvs -a --noheadings --separator '|' --units b
/// --nosuffix` prints those fields: one line per segment.
fn lines(lvs: &[LvReport<String>]) -> Vec<String> {
    let mut out = Vec::new();
    for lv in lvs {
        let name = if lv.visible {
            lv.name.clone()
        } else {
            format!("[{}]", lv.name)
        };
        for seg in &lv.segments {
            let devices: Vec<String> = seg
                .devices
                .iter()
                .map(|d| {
                    let on = match &d.on {
                        DeviceOn::Pv { device, .. } => {
                            device.clone().unwrap_or_else(|| "[unknown]".to_owned())
                        }
                        DeviceOn::Lv(name) => name.clone(),
                    };
                    format!("{on}({})", d.start)
                })
                .collect();
            out.push(format!(
                "{name}|{}|{}|{}|{}|{}|{}|{}|{}",
                lv.attr,
                seg.seg_type,
                seg.stripes,
                seg.stripe_size,
                seg.start_extent,
                seg.extent_count,
                devices.join(","),
                lv.size_bytes
            ));
        }
    }
    out
}

fn expected(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
fn every_kind_of_lv_reports_as_lvm_does() {
    let a = assembly(&["/dev/loop2950", "/dev/loop2951", "/dev/loop2952"]);
    assert_eq!(
        lines(&a.lvs(true)),
        expected(include_str!("fixtures/lvs/roles.lvs"))
    );
}

#[test]
fn a_missing_pv_makes_what_depends_on_it_partial_as_in_lvm() {
    let a = assembly(&["/dev/loop2950", "/dev/loop2951"]);
    assert_eq!(
        lines(&a.lvs(true)),
        expected(include_str!("fixtures/lvs/roles-missing.lvs"))
    );
}

#[test]
fn plain_lvs_lists_the_visible_ones() {
    let a = assembly(&["/dev/loop2950", "/dev/loop2951", "/dev/loop2952"]);
    let names: Vec<String> = a.lvs(false).into_iter().map(|l| l.name).collect();
    let want: Vec<&str> = include_str!("fixtures/lvs/roles.lvs")
        .lines()
        .map(|l| l.split('|').next().unwrap())
        .filter(|n| !n.starts_with('['))
        .collect();
    let mut want: Vec<String> = want.into_iter().map(str::to_owned).collect();
    want.dedup();
    assert_eq!(names, want);
}
