//! The JSON forms of `weir devices`, `weir pvs`, `weir vgs` and
//! `weir lvs`: arrays of objects, one per line. Sizes are bytes, uuids
//! LVM's dashed form; a device that could not be read carries its
//! `error`. An LV is one object whatever its segments, which it lists.

use serde::Serialize;
use weir_devices::sysfs::BlockDevice;
use weir_devices::{DevNum, Entry, Inventory, Probe};
use weir_lvm::assembly::{DeviceOn, LvReport, PvReport, SegReport, VgReport};

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
struct JsonLv<'a> {
    name: &'a str,
    uuid: String,
    vg_name: &'a str,
    vg_uuid: String,
    attr: &'a str,
    size_bytes: u64,
    seg_count: usize,
    segtype: String,
    stripes: Option<u64>,
    devices: String,
    segments: Vec<JsonSeg<'a>>,
}

#[derive(Serialize)]
struct JsonSeg<'a> {
    segtype: &'a str,
    stripes: u64,
    stripe_size_bytes: u64,
    start_extent: u64,
    extent_count: u64,
    start_bytes: u64,
    size_bytes: u64,
    devices: String,
    areas: Vec<JsonArea<'a>>,
}

#[derive(Serialize)]
struct JsonArea<'a> {
    pv_uuid: Option<String>,
    device: Option<String>,
    lv: Option<&'a str>,
    start: u64,
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
    fstype: Option<&'static str>,
    uuid: Option<&'a str>,
    label: Option<Bytes<'a>>,
    pv_uuid: Option<String>,
    vg_name: Option<&'a str>,
    probe: &'static str,
    error: Option<String>,
    mountpoints: Vec<Bytes<'a>>,
    filtered: bool,
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

/// `weir lvs --json`; `path` names a PV's device. Besides `segments`, an
/// LV has LVM's single-row fields over all its segments: `segtype` (the
/// one type, or the distinct types in order, comma-joined), `stripes`
/// (null when the segments differ) and `devices` (every segment's,
/// comma-joined), which are LVM's own values for an LV of one segment.
pub fn lvs_json(lvs: &[LvReport<DevNum>], path: impl Fn(DevNum) -> String) -> String {
    array(lvs.iter().map(|lv| {
        let segments: Vec<JsonSeg<'_>> =
            lv.segments.iter().map(|s| segment(lv, s, &path)).collect();
        let mut types: Vec<&str> = Vec::new();
        for s in &lv.segments {
            if !types.contains(&s.seg_type.as_str()) {
                types.push(&s.seg_type);
            }
        }
        let stripes = match lv.segments.split_first() {
            Some((first, rest)) if rest.iter().all(|s| s.stripes == first.stripes) => {
                Some(first.stripes)
            }
            _ => None,
        };
        let devices: Vec<&str> = segments
            .iter()
            .map(|s| s.devices.as_str())
            .filter(|d| !d.is_empty())
            .collect();
        JsonLv {
            name: &lv.name,
            uuid: lv.uuid.to_string(),
            vg_name: &lv.vg_name,
            vg_uuid: lv.vg_uuid.to_string(),
            attr: lv.attr.as_str(),
            size_bytes: lv.size_bytes,
            seg_count: lv.segments.len(),
            segtype: types.join(","),
            stripes,
            devices: devices.join(","),
            segments,
        }
    }))
}

fn segment<'a>(
    lv: &LvReport<DevNum>,
    s: &'a SegReport<DevNum>,
    path: &impl Fn(DevNum) -> String,
) -> JsonSeg<'a> {
    JsonSeg {
        segtype: &s.seg_type,
        stripes: s.stripes,
        stripe_size_bytes: s.stripe_size,
        start_extent: s.start_extent,
        extent_count: s.extent_count,
        start_bytes: s.start_extent.saturating_mul(lv.extent_size),
        size_bytes: s.extent_count.saturating_mul(lv.extent_size),
        devices: crate::lvm_table::devices(s, path),
        areas: s
            .devices
            .iter()
            .map(|d| match &d.on {
                DeviceOn::Pv { uuid, device } => JsonArea {
                    pv_uuid: Some(uuid.to_string()),
                    device: device.map(path),
                    lv: None,
                    start: d.start,
                },
                DeviceOn::Lv(name) => JsonArea {
                    pv_uuid: None,
                    device: None,
                    lv: Some(name),
                    start: d.start,
                },
            })
            .collect(),
    }
}

/// `weir devices --json`: `entries`, the devices listed, each with its
/// `mountpoints`.
pub(crate) fn devices_json<'a>(
    inv: &'a Inventory,
    entries: impl Iterator<Item = &'a Entry>,
    mountpoints: impl Fn(&BlockDevice) -> Vec<&'a [u8]>,
) -> String {
    let vg_of = crate::lvm_table::vg_names(inv);
    array(entries.map(|e| {
        let mut j = device(e, &vg_of);
        j.mountpoints = mountpoints(&e.device).into_iter().map(Bytes).collect();
        j.filtered = !inv.accepts(&e.device);
        j
    }))
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
        fstype: e.fsid.as_ref().map(|id| id.fstype),
        uuid: e.fsid.as_ref().and_then(|id| id.uuid.as_deref()),
        label: e
            .fsid
            .as_ref()
            .and_then(|id| id.label.as_deref())
            .map(Bytes),
        pv_uuid: pv.map(|p| p.uuid().to_string()),
        vg_name: pv.and_then(|p| vg_of.get(&p.uuid())).map(String::as_str),
        probe: crate::lvm_table::probe_word(&e.probe),
        error,
        mountpoints: Vec::new(),
        filtered: false,
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::lvm_table::tests::{lv, on_pv, path, sample, segment};

    fn parsed(text: &str) -> Vec<Value> {
        assert!(text.starts_with("[\n") && text.ends_with("\n]\n"), "{text}");
        assert_eq!(
            text.lines().count(),
            2 + serde_json::from_str::<Vec<Value>>(text).unwrap().len()
        );
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn an_lv_is_one_object_with_its_segments_and_lvm_single_row_fields() {
        let v = parsed(&lvs_json(&sample(), path));
        assert_eq!(
            v[0],
            json!({
                "name": "grown",
                "uuid": crate::lvm_table::tests::uuid(105).to_string(),
                "vg_name": "vg0",
                "vg_uuid": crate::lvm_table::tests::uuid(1).to_string(),
                "attr": "-wi-XX----",
                "size_bytes": 12u64 << 20,
                "seg_count": 2,
                "segtype": "linear",
                "stripes": 1,
                "devices": "/dev/loop0(0),[unknown](5)",
                "segments": [
                    {"segtype": "linear", "stripes": 1, "stripe_size_bytes": 0,
                     "start_extent": 0, "extent_count": 2, "start_bytes": 0,
                     "size_bytes": 8u64 << 20, "devices": "/dev/loop0(0)",
                     "areas": [{"pv_uuid": crate::lvm_table::tests::uuid(10).to_string(),
                                "device": "/dev/loop0", "lv": null, "start": 0}]},
                    {"segtype": "linear", "stripes": 1, "stripe_size_bytes": 0,
                     "start_extent": 2, "extent_count": 1, "start_bytes": 8u64 << 20,
                     "size_bytes": 4u64 << 20, "devices": "[unknown](5)",
                     "areas": [{"pv_uuid": crate::lvm_table::tests::uuid(11).to_string(),
                                "device": null, "lv": null, "start": 5}]},
                ],
            })
        );
        assert_eq!(v[1]["devices"], "/dev/loop0(2),/dev/loop1(0)");
        assert_eq!(
            (v[1]["segtype"].clone(), v[1]["stripes"].clone()),
            (json!("striped"), json!(2))
        );
        assert_eq!(v[1]["segments"][0]["stripe_size_bytes"], 64 << 10);
        assert_eq!(
            (v[2]["devices"].clone(), v[2]["stripes"].clone()),
            (json!(""), json!(0))
        );
    }

    #[test]
    fn segments_that_differ_join_their_types_and_have_no_one_stripe_count() {
        let mixed = lv(
            "mixed",
            vec![
                segment("linear", 0, 1, vec![on_pv(10, Some(0), 0)]),
                segment(
                    "striped",
                    1,
                    2,
                    vec![on_pv(10, Some(0), 1), on_pv(12, Some(1), 0)],
                ),
                segment("linear", 3, 1, vec![on_pv(12, Some(1), 1)]),
            ],
        );
        let v = parsed(&lvs_json(&[mixed, lv("empty", Vec::new())], path));
        assert_eq!(v[0]["segtype"], "linear,striped");
        assert_eq!(v[0]["stripes"], Value::Null);
        assert_eq!(
            v[0]["devices"],
            "/dev/loop0(0),/dev/loop0(1),/dev/loop1(0),/dev/loop1(1)"
        );
        assert_eq!(
            (
                v[1]["segtype"].clone(),
                v[1]["stripes"].clone(),
                v[1]["seg_count"].clone()
            ),
            (json!(""), Value::Null, json!(0))
        );
        assert_eq!(lvs_json(&[], path), "[]\n");
    }
}
