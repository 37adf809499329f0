//! The tables of `weir pvs`, `weir vgs` and `weir lvs`, laid out as LVM's
//! reports lay them out (with the columns [`lvm_columns`](crate::lvm_columns)
//! defines), and the words they share with the JSON forms and `weir devices`.

use std::collections::HashMap;

use weir_devices::{DevNum, Inventory, Probe};
use weir_lvm::Uuid;
use weir_lvm::assembly::{DeviceOn, LvReport, PvReport, SegReport, VgReport};

use crate::lvm_columns::{Def, LV_COLUMNS, LvRow, PV_COLUMNS, PvRow, VG_COLUMNS, ids_for};
use crate::lvm_view::{Listing, TextOptions};
use crate::table::{Align, render};

/// `weir vgs`: the chosen columns (`None`: VG #PV #LV SEQ VSIZE VFREE
/// COMPLETE), one row per VG.
pub fn vgs_table(vgs: &[VgReport], text: &TextOptions) -> String {
    let defs = chosen(VG_COLUMNS, &ids_for(Listing::Vgs, text.columns.as_ref()));
    let rows: Vec<Vec<String>> = vgs
        .iter()
        .map(|v| defs.iter().map(|d| (d.cell)(v, &text.units)).collect())
        .collect();
    render(&headers(&defs), &rows)
}

/// `weir pvs`: the chosen columns (`None`: PV VG PSIZE PFREE MDA UUID),
/// one row per PV; `path` names a PV's device.
pub fn pvs_table(
    pvs: &[PvReport<DevNum>],
    path: impl Fn(DevNum) -> String,
    text: &TextOptions,
) -> String {
    let defs = chosen(PV_COLUMNS, &ids_for(Listing::Pvs, text.columns.as_ref()));
    let rows: Vec<Vec<String>> = pvs
        .iter()
        .map(|pv| {
            let row = PvRow {
                pv,
                path: path(pv.device),
            };
            defs.iter().map(|d| (d.cell)(&row, &text.units)).collect()
        })
        .collect();
    render(&headers(&defs), &rows)
}

/// `weir lvs`: the chosen columns (`None`: LV VG ATTR LSIZE), one row per
/// LV, or, as LVM does when a segment's column is chosen (`-o
/// +devices`), one row per segment, the LV's columns repeated on each.
pub fn lvs_table(
    lvs: &[LvReport<DevNum>],
    path: impl Fn(DevNum) -> String,
    text: &TextOptions,
) -> String {
    let defs = chosen(LV_COLUMNS, &ids_for(Listing::Lvs, text.columns.as_ref()));
    let per_segment = defs.iter().any(|d| d.segment);
    let mut rows = Vec::new();
    for lv in lvs {
        let mut line = |seg: Option<&SegReport<DevNum>>| {
            let row = LvRow {
                lv,
                seg,
                devices: seg.map(|s| devices(s, &path)).unwrap_or_default(),
            };
            rows.push(defs.iter().map(|d| (d.cell)(&row, &text.units)).collect());
        };
        if per_segment && !lv.segments.is_empty() {
            lv.segments.iter().for_each(|s| line(Some(s)));
        } else {
            line(None);
        }
    }
    render(&headers(&defs), &rows)
}

/// LVM's `devices` of a segment: `/dev/loop0(0),/dev/loop1(0)`, an LV as
/// `name(0)`, a PV without a device as `[unknown](N)`.
pub fn devices(seg: &SegReport<DevNum>, path: impl Fn(DevNum) -> String) -> String {
    let parts: Vec<String> = seg
        .devices
        .iter()
        .map(|d| {
            let on = match &d.on {
                DeviceOn::Pv {
                    device: Some(dn), ..
                } => path(*dn),
                DeviceOn::Pv { device: None, .. } => "[unknown]".to_owned(),
                DeviceOn::Lv(name) => name.clone(),
            };
            format!("{on}({})", d.start)
        })
        .collect();
    parts.join(",")
}

/// The definitions of the chosen columns, in order.
fn chosen<'d, F>(all: &'d [Def<F>], ids: &[u8]) -> Vec<&'d Def<F>> {
    ids.iter()
        .filter_map(|&i| all.get(usize::from(i)))
        .collect()
}

fn headers<F>(defs: &[&Def<F>]) -> Vec<(&'static str, Align)> {
    defs.iter().map(|d| (d.header, d.align)).collect()
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

#[cfg(test)]
pub(crate) mod tests {
    use weir_lvm::assembly::{LvAttr, SegDevice};

    use super::*;
    use crate::lvm_columns::Columns;
    use crate::lvm_units::Units;

    pub(crate) fn uuid(n: u32) -> Uuid {
        Uuid::parse(format!("{n:032}").as_bytes()).unwrap()
    }

    pub(crate) fn on_pv(n: u32, minor: Option<u32>, start: u64) -> SegDevice<DevNum> {
        SegDevice {
            on: DeviceOn::Pv {
                uuid: uuid(n),
                device: minor.map(|m| DevNum { major: 7, minor: m }),
            },
            start,
        }
    }

    pub(crate) fn segment(
        seg_type: &str,
        start_extent: u64,
        extent_count: u64,
        devices: Vec<SegDevice<DevNum>>,
    ) -> SegReport<DevNum> {
        SegReport {
            seg_type: seg_type.into(),
            stripes: devices.len() as u64,
            stripe_size: if devices.len() > 1 { 64 << 10 } else { 0 },
            start_extent,
            extent_count,
            devices,
        }
    }

    pub(crate) fn lv(name: &str, segments: Vec<SegReport<DevNum>>) -> LvReport<DevNum> {
        let extents: u64 = segments.iter().map(|s| s.extent_count).sum();
        LvReport {
            vg_name: "vg0".into(),
            vg_uuid: uuid(1),
            name: name.into(),
            uuid: uuid(name.len() as u32 + 100),
            visible: true,
            size_bytes: extents * (4 << 20),
            extent_size: 4 << 20,
            attr: LvAttr(*b"-wi-XX----"),
            segments,
        }
    }

    pub(crate) fn path(dn: DevNum) -> String {
        format!("/dev/loop{}", dn.minor)
    }

    /// A linear LV extended onto a second, missing PV; a 2-stripe LV; a
    /// thin LV (no areas).
    pub(crate) fn sample() -> Vec<LvReport<DevNum>> {
        vec![
            lv(
                "grown",
                vec![
                    segment("linear", 0, 2, vec![on_pv(10, Some(0), 0)]),
                    segment("linear", 2, 1, vec![on_pv(11, None, 5)]),
                ],
            ),
            lv(
                "str",
                vec![segment(
                    "striped",
                    0,
                    2,
                    vec![on_pv(10, Some(0), 2), on_pv(12, Some(1), 0)],
                )],
            ),
            lv(
                "t",
                vec![SegReport {
                    stripes: 0,
                    ..segment("thin", 0, 1, Vec::new())
                }],
            ),
        ]
    }

    /// A table of these columns, in LVM's default units.
    fn cols(listing: Listing, spec: &str) -> TextOptions {
        TextOptions {
            columns: Some(Columns::parse(listing, spec).unwrap()),
            units: Units::default(),
        }
    }

    #[test]
    fn lvs_shows_a_row_per_lv_and_per_segment_with_segment_columns() {
        let lvs = sample();
        assert_eq!(
            lvs_table(&lvs, path, &TextOptions::default()),
            "LV    VG  ATTR        LSIZE\n\
             grown vg0 -wi-XX---- 12.00m\n\
             str   vg0 -wi-XX----  8.00m\n\
             t     vg0 -wi-XX----  4.00m\n"
        );
        let c = cols(
            Listing::Lvs,
            "+segtype,stripes,stripe_size,seg_start_pe,seg_size,devices",
        );
        assert_eq!(
            lvs_table(&lvs, path, &c),
            "LV    VG  ATTR        LSIZE TYPE    #STR STRIPE START_PE SSIZE DEVICES\n\
             grown vg0 -wi-XX---- 12.00m linear     1     0         0 8.00m /dev/loop0(0)\n\
             grown vg0 -wi-XX---- 12.00m linear     1     0         2 4.00m [unknown](5)\n\
             str   vg0 -wi-XX----  8.00m striped    2 64.00k        0 8.00m /dev/loop0(2),/dev/loop1(0)\n\
             t     vg0 -wi-XX----  4.00m thin       0     0         0 4.00m\n"
        );
        let c = cols(Listing::Lvs, "name,#seg");
        assert_eq!(
            lvs_table(&lvs, path, &c),
            "LV    #SEG\ngrown    2\nstr      1\nt        1\n"
        );
    }

    #[test]
    fn an_lv_area_shows_its_name() {
        let lvs = vec![lv(
            "m",
            vec![SegReport {
                devices: vec![
                    SegDevice {
                        on: DeviceOn::Lv("m_mimage_0".into()),
                        start: 0,
                    },
                    SegDevice {
                        on: DeviceOn::Lv("m_mimage_1".into()),
                        start: 0,
                    },
                ],
                ..segment("mirror", 0, 1, Vec::new())
            }],
        )];
        let c = cols(Listing::Lvs, "lv_name,devices");
        assert_eq!(
            lvs_table(&lvs, path, &c),
            "LV DEVICES\nm  m_mimage_0(0),m_mimage_1(0)\n"
        );
    }

    #[test]
    fn pvs_and_vgs_take_columns() {
        let pv = PvReport {
            device: DevNum { major: 7, minor: 3 },
            uuid: uuid(10),
            vg_name: "vg0".into(),
            vg_uuid: Some(uuid(1)),
            size_bytes: 12 << 20,
            free_bytes: 4 << 20,
            dev_size: 16 << 20,
            pe_start: 1 << 20,
            pe_count: 3,
            pe_alloc: 2,
            mda_count: 2,
            mda_in_use: 1,
            duplicate: false,
        };
        let c = cols(
            Listing::Pvs,
            "name,size,pv_pe_count,pv_pe_alloc_count,pe_start",
        );
        assert_eq!(
            pvs_table(std::slice::from_ref(&pv), path, &c),
            "PV          PSIZE PE ALLOC PE_START\n/dev/loop3 12.00m  3     2    1.00m\n"
        );
        assert!(
            pvs_table(&[pv], path, &TextOptions::default())
                .starts_with("PV         VG   PSIZE PFREE MDA UUID\n")
        );
        let vg = VgReport {
            name: "vg0".into(),
            uuid: uuid(1),
            seqno: 4,
            pv_count: 2,
            lv_count: 1,
            size_bytes: 24 << 20,
            free_bytes: 8 << 20,
            extent_size: 4 << 20,
            complete: false,
            missing: vec![uuid(11)],
            mda_count: 2,
            mda_used_count: 2,
            duplicates: 0,
        };
        let c = cols(Listing::Vgs, "vg_name,ext,#missing,complete");
        assert_eq!(
            vgs_table(std::slice::from_ref(&vg), &c),
            "VG    EXT #MISSING COMPLETE\nvg0 4.00m        1 no (1 missing)\n"
        );
        assert_eq!(
            vgs_table(&[vg], &TextOptions::default()),
            "VG  #PV #LV SEQ  VSIZE VFREE COMPLETE\nvg0   2   1   4 24.00m 8.00m no (1 missing)\n"
        );
    }
}
