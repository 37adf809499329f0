//! The tables of `weir devices`, `weir pvs` and `weir vgs`, laid out as
//! lsblk and LVM's reports lay them out, and the words they share with the
//! JSON forms.

use std::collections::HashMap;

use weir_devices::{DevNum, Inventory, Probe};
use weir_lvm::Uuid;
use weir_lvm::assembly::{PvReport, VgReport};

use crate::chain::error_chain;
use crate::table::{Align, human_size, render};

/// `weir vgs`: VG  #PV #LV VSize VFree Complete.
pub fn vgs_table(vgs: &[VgReport]) -> String {
    let rows: Vec<Vec<String>> = vgs
        .iter()
        .map(|v| {
            vec![
                v.name.clone(),
                v.pv_count.to_string(),
                v.lv_count.to_string(),
                v.seqno.to_string(),
                human_size(v.size_bytes),
                human_size(v.free_bytes),
                if v.complete {
                    "yes".to_owned()
                } else {
                    format!("no ({} missing)", v.missing.len())
                },
            ]
        })
        .collect();
    render(
        &[
            ("VG", Align::Left),
            ("#PV", Align::Right),
            ("#LV", Align::Right),
            ("SEQ", Align::Right),
            ("VSIZE", Align::Right),
            ("VFREE", Align::Right),
            ("COMPLETE", Align::Left),
        ],
        &rows,
    )
}

/// `weir pvs`: PV VG PSize PFree #MDA UUID.
pub fn pvs_table(pvs: &[PvReport<DevNum>], path: impl Fn(DevNum) -> String) -> String {
    let rows: Vec<Vec<String>> = pvs
        .iter()
        .map(|p| {
            let mut vg = p.vg_name.clone();
            if p.duplicate {
                vg.push_str(" (duplicate, unused)");
            }
            vec![
                path(p.device),
                vg,
                human_size(p.size_bytes),
                human_size(p.free_bytes),
                format!("{}/{}", p.mda_in_use, p.mda_count),
                p.uuid.to_string(),
            ]
        })
        .collect();
    render(
        &[
            ("PV", Align::Left),
            ("VG", Align::Left),
            ("PSIZE", Align::Right),
            ("PFREE", Align::Right),
            ("MDA", Align::Right),
            ("UUID", Align::Left),
        ],
        &rows,
    )
}

/// `weir devices`: NAME MAJ:MIN SIZE RO TYPE LVM BACKING/MODEL.
pub fn devices_table(inv: &Inventory) -> String {
    let vg_of = vg_names(inv);
    let rows: Vec<Vec<String>> = inv
        .devices()
        .map(|e| {
            let d = &e.device;
            let lvm = match &e.probe {
                Probe::Pv(pv) => match vg_of.get(&pv.uuid()) {
                    Some(vg) => format!("PV of {vg}"),
                    None => "PV".to_owned(),
                },
                Probe::Failed(err) => format!("error: {}", error_chain(err.as_ref())),
                other => probe_word(other).to_owned(),
            };
            let about = d
                .backing_file
                .as_ref()
                .map(|p| p.display().to_string())
                .or_else(|| d.model.clone())
                .unwrap_or_default();
            vec![
                d.name.clone(),
                format!("{}:{}", d.major, d.minor),
                human_size(d.size_bytes),
                if d.read_only { "1" } else { "0" }.to_owned(),
                weir_devices::change::device_type(d).to_owned(),
                lvm,
                about,
            ]
        })
        .collect();
    render(
        &[
            ("NAME", Align::Left),
            ("MAJ:MIN", Align::Left),
            ("SIZE", Align::Right),
            ("RO", Align::Right),
            ("TYPE", Align::Left),
            ("LVM", Align::Left),
            ("BACKING/MODEL", Align::Left),
        ],
        &rows,
    )
}

/// The VG name of each PV uuid that a VG's metadata lists.
pub fn vg_names(inv: &Inventory) -> HashMap<Uuid, String> {
    inv.pvs()
        .into_iter()
        .filter(|p| !p.vg_name.is_empty())
        .map(|p| (p.uuid, p.vg_name))
        .collect()
}

/// What probing found, in a word.
pub fn probe_word(p: &Probe) -> &'static str {
    match p {
        Probe::Skipped(s) => s.as_str(),
        Probe::NotPv => "-",
        Probe::Pv(_) => "pv",
        Probe::Failed(_) => "error",
    }
}
