//! Unit tests of the `lvs` report: `lv_attr` letter by letter, sorting
//! and visibility, devices of missing PVs and of LVs, and partial LVs
//! through chains and cycles. `tests/lvs_roles.rs` compares a VG with an
//! LV of most kinds against what LVM 2.03.16 printed for it.

use std::sync::Arc;

use super::*;
use crate::assembly::PvSeen;
use crate::meta::parse_vg;

const PV0: &str = "Lilb7k-f6Yn-deG6-cJXU-yc1o-9jfd-4nMbth";
const PV1: &str = "qruQ6W-N2NJ-hQCh-yflh-WWru-hdJy-RJxadh";

/// PV `k`'s uuid in the VG of `tag`: PV0 and PV1 for tag `h`.
fn pv_id(k: usize, tag: char) -> String {
    let base = [PV0, PV1][k];
    format!("{}{tag}", &base[..base.len() - 1])
}

/// A VG text named `name` (its uuid and its PVs' ending in `tag`) on two
/// PVs of 100 extents of 4 MiB, holding the `lvs` sections given.
fn text(name: &str, tag: char, lvs: &str) -> String {
    let (pv0, pv1) = (pv_id(0, tag), pv_id(1, tag));
    format!(
        r#"{name} {{
id = "rfnpbt-6767-fXEO-EQRj-ePq5-dO91-onkS2{tag}"
seqno = 3
status = ["RESIZEABLE", "READ", "WRITE"]
extent_size = 8192
physical_volumes {{
pv0 {{ id = "{pv0}" status = ["ALLOCATABLE"] dev_size = 1048576 pe_start = 2048 pe_count = 100 }}
pv1 {{ id = "{pv1}" status = ["ALLOCATABLE"] dev_size = 1048576 pe_start = 2048 pe_count = 100 }}
}}
logical_volumes {{
{lvs}
}}
}}
contents = "Text Format Volume Group"
version = 1
"#
    )
}

/// An LV section: `status`, extra keys (`flags`, `allocation_policy`),
/// and one linear segment of `n` extents on `pv` from extent `at`.
fn linear(name: &str, n: u32, status: &str, extra: &str, pv: &str, at: u32) -> String {
    let id = format!("{:0>32}", name.len() * 7 + at as usize);
    format!(
        r#"{name} {{ id = "{id}" status = [{status}] {extra} segment_count = 1
segment1 {{ start_extent = 0 extent_count = {n} type = "striped" stripe_count = 1 stripes = ["{pv}", {at}] }} }}
"#
    )
}

/// An LV section with one segment of any kind (`body` after the type).
fn seg(name: &str, n: u32, status: &str, ty: &str, body: &str) -> String {
    let id = format!("{:0>32}", name.len() * 13 + n as usize);
    format!(
        r#"{name} {{ id = "{id}" status = [{status}] segment_count = 1
segment1 {{ start_extent = 0 extent_count = {n} type = "{ty}" {body} }} }}
"#
    )
}

const RWV: &str = r#""READ", "WRITE", "VISIBLE""#;
const RW: &str = r#""READ", "WRITE""#;

fn uuid(s: &str) -> Uuid {
    Uuid::parse(s.as_bytes()).unwrap()
}

/// An assembly holding `texts`, each VG's metadata on each of its PVs,
/// PV `k` of VG `i` as device `{i}{k}`, except the first VG's PVs in
/// `absent`.
fn assembly(texts: &[&str], absent: &[usize]) -> Assembly<String> {
    let mut a = Assembly::new();
    for (i, t) in texts.iter().enumerate() {
        let meta = Arc::new(parse_vg(t.as_bytes()).unwrap());
        for (k, pv) in meta.pvs.iter().enumerate() {
            if i == 0 && absent.contains(&k) {
                continue;
            }
            let seen = PvSeen {
                uuid: pv.id,
                device_size: 400 << 20,
                pe_start: 1 << 20,
                mda_count: 1,
                mda_in_use: 1,
                vg: Some(meta.clone()),
            };
            a.add(format!("{i}{k}"), seen);
        }
    }
    a
}

/// `name: attr` of every LV listed.
fn attrs(a: &Assembly<String>, all: bool) -> Vec<String> {
    a.lvs(all)
        .iter()
        .map(|l| format!("{}: {}", l.name, l.attr))
        .collect()
}

#[test]
fn attr_has_type_permission_policy_minor_and_skip() {
    let lvs = [
        linear("inherit", 1, RWV, "", "pv0", 0),
        linear(
            "normal",
            1,
            RWV,
            r#"allocation_policy = "normal""#,
            "pv0",
            1,
        ),
        linear(
            "contig",
            1,
            RWV,
            r#"allocation_policy = "contiguous""#,
            "pv0",
            2,
        ),
        linear("cling", 1, RWV, r#"allocation_policy = "cling""#, "pv0", 3),
        linear(
            "bytags",
            1,
            RWV,
            r#"allocation_policy = "cling_by_tags""#,
            "pv0",
            4,
        ),
        linear(
            "anywhere",
            1,
            RWV,
            r#"allocation_policy = "anywhere""#,
            "pv0",
            5,
        ),
        linear(
            "nextfree",
            1,
            RWV,
            r#"allocation_policy = "next free""#,
            "pv0",
            6,
        ),
        linear("bogus", 1, RWV, r#"allocation_policy = "bogus""#, "pv0", 7),
        linear(
            "locked",
            1,
            r#""READ", "WRITE", "VISIBLE", "LOCKED""#,
            r#"allocation_policy = "anywhere""#,
            "pv0",
            8,
        ),
        linear(
            "minor",
            1,
            r#""READ", "WRITE", "VISIBLE", "FIXED_MINOR""#,
            "minor = 9",
            "pv0",
            9,
        ),
        linear("ro", 1, r#""READ", "VISIBLE""#, "", "pv0", 10),
        linear(
            "wlocked",
            1,
            r#""READ", "VISIBLE""#,
            r#"flags = ["WRITE_LOCKED"]"#,
            "pv0",
            11,
        ),
        linear("none", 1, r#""VISIBLE""#, "", "pv0", 12),
        linear("skip", 1, RWV, r#"flags = ["ACTIVATION_SKIP"]"#, "pv0", 13),
    ]
    .concat();
    let a = assembly(&[&text("vg", 'h', &lvs)], &[]);
    assert_eq!(
        attrs(&a, false),
        [
            "anywhere: -wa-XX----",
            "bogus: -wi-XX----",
            "bytags: -wl-XX----",
            "cling: -wl-XX----",
            "contig: -wc-XX----",
            "inherit: -wi-XX----",
            "locked: -wA-XX----",
            "minor: -wimXX----",
            "nextfree: -wn-XX----",
            "none: --i-XX----",
            "normal: -wn-XX----",
            "ro: -ri-XX----",
            "skip: -wi-XX---k",
            "wlocked: -wi-XX----",
        ]
    );
}

#[test]
fn sorted_by_vg_then_lv_and_hidden_lvs_only_with_all() {
    let b = [
        linear("zeta", 1, RWV, "", "pv0", 0),
        linear("alpha", 2, RWV, "", "pv0", 1),
        linear("hidden", 1, RW, "", "pv0", 3),
    ]
    .concat();
    let a_vg = linear("mid", 1, RWV, "", "pv0", 0);
    let asm = assembly(&[&text("vgb", 'h', &b), &text("vga", 'i', &a_vg)], &[]);
    let names = |all| {
        asm.lvs(all)
            .iter()
            .map(|l| format!("{}/{}", l.vg_name, l.name))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(false), ["vga/mid", "vgb/alpha", "vgb/zeta"]);
    assert_eq!(
        names(true),
        ["vga/mid", "vgb/alpha", "vgb/hidden", "vgb/zeta"]
    );
    let alpha = &asm.lvs(false)[1];
    assert_eq!(alpha.size_bytes, 8 << 20);
    assert_eq!(alpha.extent_size, 4 << 20);
    assert_eq!(
        alpha.vg_uuid.to_string(),
        "rfnpbt-6767-fXEO-EQRj-ePq5-dO91-onkS2h"
    );
    assert!(
        asm.lvs(true)
            .iter()
            .any(|l| l.name == "hidden" && !l.visible)
    );
}

#[test]
fn segments_devices_and_missing_pvs() {
    let lvs = [
        // Extended onto the second PV: two segments.
        r#"grown { id = "000000000000000000000000000grown" status = ["READ", "WRITE", "VISIBLE"] segment_count = 2
segment1 { start_extent = 0 extent_count = 2 type = "striped" stripe_count = 1 stripes = ["pv0", 0] }
segment2 { start_extent = 2 extent_count = 1 type = "striped" stripe_count = 1 stripes = ["pv1", 5] } }
"#,
        r#"str { id = "0000000000000000000000000000str0" status = ["READ", "WRITE", "VISIBLE"] segment_count = 1
segment1 { start_extent = 0 extent_count = 4 type = "striped" stripe_count = 2 stripe_size = 128 stripes = ["pv0", 2, "pv1", 0] } }
"#,
        &seg("err", 1, RWV, "error", ""),
    ]
    .concat();
    let t = text("vg", 'h', &lvs);
    let both = assembly(&[&t], &[]);
    let lvs = both.lvs(false);
    let names: Vec<&str> = lvs.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["err", "grown", "str"]);
    let (err, grown, str_) = (&lvs[0], &lvs[1], &lvs[2]);
    assert_eq!(err.attr.as_str(), "vwi-XXv---");
    assert_eq!(
        (err.segments[0].seg_type.as_str(), err.segments[0].stripes),
        ("error", 0)
    );
    assert!(err.segments[0].devices.is_empty());
    assert_eq!(grown.segments.len(), 2);
    let s2 = &grown.segments[1];
    assert_eq!(
        (s2.seg_type.as_str(), s2.start_extent, s2.extent_count),
        ("linear", 2, 1)
    );
    assert_eq!(
        s2.devices,
        [SegDevice {
            on: DeviceOn::Pv {
                uuid: uuid(PV1),
                device: Some("01".to_owned())
            },
            start: 5
        }]
    );
    let s = &str_.segments[0];
    assert_eq!(
        (s.seg_type.as_str(), s.stripes, s.stripe_size),
        ("striped", 2, 64 << 10)
    );
    assert_eq!(str_.size_bytes, 16 << 20);

    // Without the second PV: no device there, and both LVs on it partial.
    let one = assembly(&[&t], &[1]);
    let lvs = one.lvs(false);
    assert_eq!(
        lvs.iter().map(|l| l.attr.to_string()).collect::<Vec<_>>(),
        ["vwi-XXv---", "-wi-XX--p-", "-wi-XX--p-"]
    );
    assert_eq!(
        lvs[2].segments[0].devices[1].on,
        DeviceOn::Pv {
            uuid: uuid(PV1),
            device: None
        }
    );
}

#[test]
fn a_pv_flagged_missing_makes_its_lvs_partial() {
    let t = text("vg", 'h', &linear("lv", 1, RWV, "", "pv1", 0)).replacen(
        &format!(r#"pv1 {{ id = "{PV1}" status = ["ALLOCATABLE"]"#),
        &format!(r#"pv1 {{ id = "{PV1}" status = ["ALLOCATABLE"] flags = ["MISSING"]"#),
        1,
    );
    // Present, but LVM still counts it missing until it is restored.
    let a = assembly(&[&t], &[]);
    assert_eq!(attrs(&a, false), ["lv: -wi-XX--p-"]);
}

#[test]
fn partial_goes_up_chains_and_cycles_end() {
    // top -> mid -> leg (on the second PV); a and b name each other.
    let lvs = [
        seg(
            "top",
            1,
            RWV,
            "striped",
            r#"stripe_count = 1 stripes = ["mid", 0]"#,
        ),
        seg(
            "mid",
            1,
            RW,
            "striped",
            r#"stripe_count = 1 stripes = ["leg", 0]"#,
        ),
        linear("leg", 1, RW, "", "pv1", 0),
        seg(
            "a",
            1,
            RWV,
            "striped",
            r#"stripe_count = 1 stripes = ["b", 0]"#,
        ),
        seg(
            "b",
            1,
            RWV,
            "striped",
            r#"stripe_count = 1 stripes = ["a", 0]"#,
        ),
        linear("fine", 1, RWV, "", "pv0", 0),
    ]
    .concat();
    let a = assembly(&[&text("vg", 'h', &lvs)], &[1]);
    assert_eq!(
        attrs(&a, true),
        [
            "a: -wi-XX----",
            "b: -wi-XX----",
            "fine: -wi-XX----",
            "leg: -wi-XX--p-",
            "mid: -wi-XX--p-",
            "top: -wi-XX--p-",
        ]
    );
    let top = a.lvs(false).into_iter().find(|l| l.name == "top").unwrap();
    assert_eq!(
        top.segments[0].devices,
        [SegDevice {
            on: DeviceOn::Lv("mid".to_owned()),
            start: 0
        }]
    );
}

#[test]
fn snapshots_origins_and_cows() {
    let lvs = [
        linear("orig", 1, RWV, "", "pv0", 0),
        // LVM writes a COW without VISIBLE; it shows with its origin.
        linear("snap", 1, RW, "", "pv0", 1),
        seg(
            "snapshot0",
            1,
            RW,
            "snapshot",
            r#"chunk_size = 8 origin = "orig" cow_store = "snap""#,
        ),
        linear("morig", 1, RWV, "", "pv0", 2),
        linear("msnap", 1, RW, "", "pv0", 3),
        seg(
            "snapshot1",
            1,
            RW,
            "snapshot",
            r#"chunk_size = 8 origin = "morig" merging_store = "msnap""#,
        ),
    ]
    .concat();
    let a = assembly(&[&text("vg", 'h', &lvs)], &[]);
    assert_eq!(
        attrs(&a, false),
        ["morig: Owi-XXs---", "orig: owi-XXs---", "snap: swi-XXs---"]
    );
    // The merging COW is hidden; the snapshot LVs are never listed.
    assert_eq!(
        attrs(&a, true),
        [
            "morig: Owi-XXs---",
            "msnap: Swi-XXs---",
            "orig: owi-XXs---",
            "snap: swi-XXs---"
        ]
    );
}

#[test]
fn an_unknown_segment_type_is_virtual_with_target_u() {
    let lvs = seg("odd", 1, RWV, "frobnicate", "");
    let a = assembly(&[&text("vg", 'h', &lvs)], &[]);
    let lv = &a.lvs(false)[0];
    assert_eq!(lv.attr.as_str(), "vwi-XXu---");
    assert_eq!(lv.segments[0].seg_type, "frobnicate");
}

#[test]
fn attr_shows_as_its_ten_characters() {
    let a = LvAttr(*b"-wi-XX----");
    assert_eq!(a.to_string(), "-wi-XX----");
    assert_eq!(format!("{a:?}"), "LvAttr(-wi-XX----)");
}
