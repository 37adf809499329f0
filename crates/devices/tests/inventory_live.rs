//! [`Inventory::scan`] against VGs that real LVM2 built on loop devices:
//! the same VG and PV numbers as LVM's own report, a few KiB read per PV
//! and each metadata text once, a VG with a PV detached, and two devices
//! with the same PV uuid.
//!
//! Every scan is filtered to the test's own loop devices, since other
//! tests attach loop devices at the same time. These tests need root,
//! losetup and lvm, and print `skipping: ...` without them.

use std::collections::BTreeMap;

use weir_devices::{DevNum, Filter, Inventory, Probe, Skip, Sysfs};
use weir_lvm::assembly::{PvReport, VgReport};
use weir_lvmfleet::Fleet;

/// What the comparisons ask of `lvm vgs`.
const VG_FIELDS: &str = "vg_name,vg_uuid,vg_seqno,pv_count,lv_count,vg_size,vg_free,\
                         vg_extent_size,vg_mda_count,vg_mda_used_count";
/// What the comparisons ask of `lvm pvs`.
const PV_FIELDS: &str = "pv_name,pv_uuid,vg_name,vg_uuid,pv_size,pv_free,dev_size,pe_start,\
                         pv_pe_count,pv_pe_alloc_count,pv_mda_count,pv_mda_used_count";

/// The most a probe may read of one PV, its metadata text aside: the
/// label sectors and two mda headers fit in far less.
const PER_PV_BYTES: u64 = 8192;

fn skipping() -> bool {
    match weir_lvmfleet::unavailable() {
        Some(why) => {
            eprintln!("skipping: {why}");
            true
        }
        None => false,
    }
}

fn scan(fleet: &Fleet) -> Inventory {
    let filter = Filter::parse(&fleet.filter_patterns()).expect("the fleet's filter parses");
    let (inv, _) = Inventory::scan(Sysfs::default(), filter).expect("scan");
    inv
}

/// The device path of a PV in the report.
fn path_of(inv: &Inventory, dn: DevNum) -> String {
    let e = inv
        .get(dn)
        .expect("a reported PV's device is in the inventory");
    e.device.dev_path().display().to_string()
}

/// `vg` as LVM's report spells it.
fn vg_row(v: &VgReport) -> BTreeMap<String, String> {
    [
        ("vg_name", v.name.clone()),
        ("vg_uuid", v.uuid.to_string()),
        ("vg_seqno", v.seqno.to_string()),
        ("pv_count", v.pv_count.to_string()),
        ("lv_count", v.lv_count.to_string()),
        ("vg_size", v.size_bytes.to_string()),
        ("vg_free", v.free_bytes.to_string()),
        ("vg_extent_size", v.extent_size.to_string()),
        ("vg_mda_count", v.mda_count.to_string()),
        ("vg_mda_used_count", v.mda_used_count.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// `pv` as LVM's report spells it.
fn pv_row(inv: &Inventory, p: &PvReport<DevNum>) -> BTreeMap<String, String> {
    [
        ("pv_name", path_of(inv, p.device)),
        ("pv_uuid", p.uuid.to_string()),
        ("vg_name", p.vg_name.clone()),
        (
            "vg_uuid",
            p.vg_uuid.map(|u| u.to_string()).unwrap_or_default(),
        ),
        ("pv_size", p.size_bytes.to_string()),
        ("pv_free", p.free_bytes.to_string()),
        ("dev_size", p.dev_size.to_string()),
        ("pe_start", p.pe_start.to_string()),
        ("pv_pe_count", p.pe_count.to_string()),
        ("pv_pe_alloc_count", p.pe_alloc.to_string()),
        ("pv_mda_count", p.mda_count.to_string()),
        ("pv_mda_used_count", p.mda_in_use.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn sorted_pv_rows(inv: &Inventory) -> Vec<BTreeMap<String, String>> {
    let mut rows: Vec<_> = inv.pvs().iter().map(|p| pv_row(inv, p)).collect();
    rows.sort_by(|a, b| a["pv_name"].cmp(&b["pv_name"]));
    rows
}

/// The PV uuid LVM reports for `path`.
fn lvm_uuid(pvs: &[BTreeMap<String, String>], path: &str) -> String {
    pvs.iter()
        .find(|r| r["pv_name"] == path)
        .unwrap_or_else(|| panic!("lvm does not report {path}: {pvs:?}"))["pv_uuid"]
        .clone()
}

#[test]
fn scan_matches_lvm_and_reads_a_few_kib_per_pv() {
    if skipping() {
        return;
    }
    let fleet = Fleet::build("par", &[0, 1, 2, 2], 1, 0).expect("make the fleet");
    let lvm_vgs = fleet.report("vgs", VG_FIELDS);
    let mut lvm_pvs = fleet.report("pvs", PV_FIELDS);
    lvm_pvs.sort_by(|a, b| a["pv_name"].cmp(&b["pv_name"]));
    // The fixture is what the test means it to be.
    assert_eq!(lvm_vgs.len(), 1, "{lvm_vgs:?}");
    assert_ne!(
        lvm_vgs[0]["vg_free"], lvm_vgs[0]["vg_size"],
        "an LV uses space"
    );
    // Sorted by count: the rows are in name order, and loop device names
    // (loop9, loop10) need not sort in the order they were attached.
    let mut mdas: Vec<&str> = lvm_pvs.iter().map(|r| r["pv_mda_count"].as_str()).collect();
    mdas.sort_unstable();
    assert_eq!(mdas, ["0", "1", "2", "2"]);

    let inv = scan(&fleet);
    let vgs = inv.vgs();
    assert_eq!(vgs.len(), 1, "only the fleet's devices are read: {vgs:?}");
    assert_eq!(vg_row(&vgs[0]), lvm_vgs[0]);
    assert!(vgs[0].complete && vgs[0].missing.is_empty() && vgs[0].duplicates == 0);
    assert_eq!(sorted_pv_rows(&inv), lvm_pvs);

    // Nothing but the fleet was opened.
    let ours = fleet.paths();
    for e in inv.devices() {
        let path = e.device.dev_path().display().to_string();
        if ours.contains(&path) {
            assert!(matches!(e.probe, Probe::Pv(_)), "{path}: {:?}", e.probe);
        } else {
            assert!(
                matches!(
                    e.probe,
                    Probe::Skipped(Skip::Filtered | Skip::Empty | Skip::Partitioned)
                ),
                "{path} was read: {:?}",
                e.probe
            );
        }
    }
    assert_eq!(inv.pv_count(), 4);

    // A label and mda headers per PV, and the one text (5 copies of it)
    // read once.
    let text = inv.text_stats();
    assert_eq!(text.texts_read, 1, "{text:?}");
    assert!(text.bytes_read > 0);
    let read = inv.counters().bytes_read;
    // The text's read covers whole aligned blocks: up to one block more
    // than the text where it starts and where it ends (or wraps).
    let text_allowance = text.bytes_read.next_multiple_of(4096) + 4096;
    assert!(
        read <= 4 * PER_PV_BYTES + text_allowance,
        "{read} bytes read for 4 PVs and a text of {} bytes",
        text.bytes_read
    );
    assert!(read >= text.bytes_read + 4 * 512, "{read} bytes read");
}

#[test]
fn a_detached_pv_leaves_the_vg_incomplete_with_its_uuid_missing() {
    if skipping() {
        return;
    }
    let mut fleet = Fleet::build("mis", &[1, 0, 2], 0, 0).expect("make the fleet");
    let lvm_pvs = fleet.report("pvs", PV_FIELDS);
    let gone = lvm_uuid(&lvm_pvs, &fleet.path(2));
    fleet.detach(2).expect("detach");

    let inv = scan(&fleet);
    let vgs = inv.vgs();
    assert_eq!(vgs.len(), 1, "{vgs:?}");
    let vg = &vgs[0];
    assert_eq!(vg.name, fleet.vg_name());
    assert!(!vg.complete);
    let missing: Vec<String> = vg.missing.iter().map(ToString::to_string).collect();
    assert_eq!(missing, [gone.as_str()]);
    assert_eq!(vg.pv_count, 3, "the metadata still lists three PVs");
    assert_eq!(vg.mda_count, 1, "only the present PVs' areas count");
    // LVM agrees on what is missing.
    let lvm_vgs = fleet.report("vgs", "vg_name,vg_missing_pv_count");
    assert_eq!(lvm_vgs[0]["vg_missing_pv_count"], "1", "{lvm_vgs:?}");
    let pvs = inv.pvs();
    assert_eq!(pvs.len(), 2);
    assert!(pvs.iter().all(|p| p.uuid.to_string() != gone));
    let e = inv
        .by_name(&fleet.name(2))
        .expect("the detached loop device");
    assert!(
        matches!(e.probe, Probe::Skipped(Skip::Empty)),
        "{:?}",
        e.probe
    );

    fleet.attach(2).expect("attach");
    let inv = scan(&fleet);
    assert!(inv.vgs()[0].complete && inv.vgs()[0].missing.is_empty());
}

#[test]
fn a_copied_pv_is_flagged_duplicate_counted_once_and_never_merged() {
    if skipping() {
        return;
    }
    let mut fleet = Fleet::build("dup", &[1, 2, 0], 0, 1).expect("make the fleet");
    let lvm_vgs = fleet.report("vgs", VG_FIELDS);
    let mut lvm_pvs = fleet.report("pvs", PV_FIELDS);
    lvm_pvs.sort_by(|a, b| a["pv_name"].cmp(&b["pv_name"]));
    let copied = lvm_uuid(&lvm_pvs, &fleet.path(1));
    fleet.attach_copy(3, 1).expect("attach a copy");

    let inv = scan(&fleet);
    // Two devices, each its own entry, each with the label.
    let (a, b) = (
        inv.by_name(&fleet.name(1)).unwrap(),
        inv.by_name(&fleet.name(3)).unwrap(),
    );
    for e in [a, b] {
        let pv = e.probe.pv().expect("both devices carry the PV");
        assert_eq!(pv.uuid().to_string(), copied);
    }
    assert_eq!(inv.pv_count(), 4);
    let pvs = inv.pvs();
    assert_eq!(pvs.len(), 4, "both devices are listed: {pvs:?}");
    let same: Vec<&PvReport<DevNum>> = pvs
        .iter()
        .filter(|p| p.uuid.to_string() == copied)
        .collect();
    assert_eq!(same.len(), 2);
    assert_eq!(
        same.iter().filter(|p| p.duplicate).count(),
        1,
        "exactly one of the two is the unused duplicate: {same:?}"
    );
    // The one in use reports what LVM reported before the copy.
    let used = same.iter().find(|p| !p.duplicate).unwrap();
    let mut row = pv_row(&inv, used);
    row.insert("pv_name".into(), fleet.path(1));
    assert_eq!(
        row,
        *lvm_pvs.iter().find(|r| r["pv_uuid"] == copied).unwrap()
    );

    // One VG, its PVs and metadata areas counted once.
    let vgs = inv.vgs();
    assert_eq!(vgs.len(), 1, "{vgs:?}");
    assert_eq!(vg_row(&vgs[0]), lvm_vgs[0]);
    assert!(vgs[0].complete);
    assert_eq!(vgs[0].duplicates, 1);
    // The copy's text is the same text: not read again.
    assert_eq!(inv.text_stats().texts_read, 1);

    // Without the original, the copy serves and nothing is a duplicate.
    fleet.detach(1).expect("detach");
    let inv = scan(&fleet);
    let vgs = inv.vgs();
    assert!(vgs[0].complete && vgs[0].duplicates == 0, "{vgs:?}");
    let pvs = inv.pvs();
    assert_eq!(pvs.len(), 3);
    assert!(pvs.iter().all(|p| !p.duplicate));
    let served = pvs
        .iter()
        .find(|p| p.uuid.to_string() == copied)
        .expect("the copy");
    assert_eq!(path_of(&inv, served.device), fleet.path(3));
}
