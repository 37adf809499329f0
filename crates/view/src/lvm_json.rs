//! The JSON forms of `weir devices`, `weir pvs` and `weir vgs`: arrays of
//! objects, one per line. Sizes are bytes, uuids LVM's dashed form; a
//! device that could not be read carries its `error`.

use serde::Serialize;
use weir_devices::{DevNum, Entry, Inventory, Probe};
use weir_lvm::assembly::{PvReport, VgReport};

use crate::bytes::Bytes;

#[derive(Serialize)]
struct JsonVg<'a> {
    name: &'a str,
    uuid: String,
    seqno: u64,
    pv_count: usize,
    lv_count: usize,
    size_bytes: u64,
    free_bytes: u64,
    extent_size_bytes: u64,
    complete: bool,
    missing_pvs: usize,
    missing_pv_uuids: Vec<String>,
    mda_count: u64,
    mda_used_count: u64,
    duplicate_pvs: usize,
}

#[derive(Serialize)]
struct JsonPv<'a> {
    device: String,
    uuid: String,
    vg_name: &'a str,
    vg_uuid: Option<String>,
    size_bytes: u64,
    free_bytes: u64,
    dev_size_bytes: u64,
    pe_start_bytes: u64,
    pe_count: u64,
    pe_alloc: u64,
    mda_count: u32,
    mda_in_use: u32,
    duplicate: bool,
}

#[derive(Serialize)]
struct JsonDevice<'a> {
    name: &'a str,
    path: String,
    major: u32,
    minor: u32,
    size_bytes: u64,
    read_only: bool,
    removable: Option<bool>,
    rotational: Option<bool>,
    #[serde(rename = "type")]
    kind: &'static str,
    parent: Option<&'a str>,
    partitions: Vec<&'a str>,
    holders: &'a [String],
    slaves: &'a [String],
    backing_file: Option<Bytes<'a>>,
    model: Option<&'a str>,
    serial: Option<&'a str>,
    wwid: Option<&'a str>,
    diskseq: Option<u64>,
    pv_uuid: Option<String>,
    vg_name: Option<&'a str>,
    probe: &'static str,
    error: Option<String>,
}

/// `weir vgs --json`.
pub fn vgs_json(vgs: &[VgReport]) -> String {
    array(vgs.iter().map(|v| JsonVg {
        name: &v.name,
        uuid: v.uuid.to_string(),
        seqno: v.seqno,
        pv_count: v.pv_count,
        lv_count: v.lv_count,
        size_bytes: v.size_bytes,
        free_bytes: v.free_bytes,
        extent_size_bytes: v.extent_size,
        complete: v.complete,
        missing_pvs: v.missing.len(),
        missing_pv_uuids: v.missing.iter().map(ToString::to_string).collect(),
        mda_count: v.mda_count,
        mda_used_count: v.mda_used_count,
        duplicate_pvs: v.duplicates,
    }))
}

/// `weir pvs --json`; `path` names a PV's device.
pub fn pvs_json(pvs: &[PvReport<DevNum>], path: impl Fn(DevNum) -> String) -> String {
    array(pvs.iter().map(|p| JsonPv {
        device: path(p.device),
        uuid: p.uuid.to_string(),
        vg_name: &p.vg_name,
        vg_uuid: p.vg_uuid.map(|u| u.to_string()),
        size_bytes: p.size_bytes,
        free_bytes: p.free_bytes,
        dev_size_bytes: p.dev_size,
        pe_start_bytes: p.pe_start,
        pe_count: p.pe_count,
        pe_alloc: p.pe_alloc,
        mda_count: p.mda_count,
        mda_in_use: p.mda_in_use,
        duplicate: p.duplicate,
    }))
}

/// `weir devices --json`.
pub fn devices_json(inv: &Inventory) -> String {
    let vg_of = crate::lvm_table::vg_names(inv);
    array(inv.devices().map(|e| device(e, &vg_of)))
}

fn device<'a>(
    e: &'a Entry,
    vg_of: &'a std::collections::HashMap<weir_lvm::Uuid, String>,
) -> JsonDevice<'a> {
    let d = &e.device;
    let (parent, partitions) = match &d.kind {
        weir_devices::sysfs::Kind::Partition { parent, .. } => (Some(parent.as_str()), Vec::new()),
        weir_devices::sysfs::Kind::Disk { partitions } => {
            (None, partitions.iter().map(String::as_str).collect())
        }
    };
    let pv = e.probe.pv();
    let error = match &e.probe {
        Probe::Failed(err) => Some(crate::chain::error_chain(err.as_ref())),
        _ => None,
    };
    JsonDevice {
        name: &d.name,
        path: d.dev_path().display().to_string(),
        major: d.major,
        minor: d.minor,
        size_bytes: d.size_bytes,
        read_only: d.read_only,
        removable: d.removable,
        rotational: d.rotational,
        kind: weir_devices::change::device_type(d),
        parent,
        partitions,
        holders: &d.holders,
        slaves: &d.slaves,
        backing_file: d
            .backing_file
            .as_ref()
            .map(|p| Bytes(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()))),
        model: d.model.as_deref(),
        serial: d.serial.as_deref(),
        wwid: d.wwid.as_deref(),
        diskseq: d.diskseq,
        pv_uuid: pv.map(|p| p.uuid().to_string()),
        vg_name: pv.and_then(|p| vg_of.get(&p.uuid())).map(String::as_str),
        probe: crate::lvm_table::probe_word(&e.probe),
        error,
    }
}

fn array<T: Serialize>(items: impl Iterator<Item = T>) -> String {
    let mut out = String::from("[");
    let mut first = true;
    for item in items {
        out.push_str(if first { "\n  " } else { ",\n  " });
        first = false;
        // Plain structs of strings and numbers always serialize.
        out.push_str(&serde_json::to_string(&item).unwrap_or_default());
    }
    out.push_str(if first { "]\n" } else { "\n]\n" });
    out
}
