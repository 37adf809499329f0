//! The columns of the `weir pvs`, `weir vgs` and `weir lvs` tables, and
//! `-o` (and the API's `columns`) choosing among them as LVM's reports
//! and lsblk do: `-o name,size`, or `-o +devices` to add to the default
//! columns; case-insensitive; a column by weir's header (`PSIZE`) or by
//! LVM's field name (`pv_size`, or `size` without the report's prefix).
//!
//! Each column is defined once, with its header, LVM's names for it, its
//! alignment and how its cell is made, so the table, the parser and the
//! error listing the valid names cannot disagree. Only the text tables
//! take columns: the JSON forms always carry every field.

use weir_devices::DevNum;
use weir_lvm::assembly::{LvReport, PvReport, SegReport, VgReport};

use crate::error::{Error, Result};
use crate::lvm_units::Units;
use crate::lvm_view::Listing;
use crate::table::{Align, MAX_COLUMNS};

/// One `weir pvs` row: the PV and its device's path.
pub(crate) struct PvRow<'a> {
    pub(crate) pv: &'a PvReport<DevNum>,
    pub(crate) path: String,
}

/// One `weir lvs` row: an LV, and one of its segments when segment
/// columns are shown, with that segment's `devices`.
pub(crate) struct LvRow<'a> {
    pub(crate) lv: &'a LvReport<DevNum>,
    pub(crate) seg: Option<&'a SegReport<DevNum>>,
    pub(crate) devices: String,
}

/// One column: its header, LVM's names for it, its alignment, whether it
/// is a segment's (an LV's table then has a row per segment), and its
/// cell.
pub(crate) struct Def<F> {
    pub(crate) header: &'static str,
    pub(crate) fields: &'static [&'static str],
    pub(crate) align: Align,
    pub(crate) segment: bool,
    pub(crate) cell: F,
}

type PvCell = for<'a, 'b> fn(&'b PvRow<'a>, &Units) -> String;
type VgCell = fn(&VgReport, &Units) -> String;
type LvCell = for<'a, 'b> fn(&'b LvRow<'a>, &Units) -> String;

const fn col<F>(
    header: &'static str,
    fields: &'static [&'static str],
    align: Align,
    cell: F,
) -> Def<F> {
    Def {
        header,
        fields,
        align,
        segment: false,
        cell,
    }
}

const fn seg<F>(
    header: &'static str,
    fields: &'static [&'static str],
    align: Align,
    cell: F,
) -> Def<F> {
    Def {
        header,
        fields,
        align,
        segment: true,
        cell,
    }
}

use Align::{Left as L, Right as R};

pub(crate) const PV_COLUMNS: &[Def<PvCell>] = &[
    col("PV", &["pv_name"], L, |r, _| r.path.clone()),
    col("VG", &["vg_name"], L, |r, _| {
        let mut vg = r.pv.vg_name.clone();
        if r.pv.duplicate {
            vg.push_str(" (duplicate, unused)");
        }
        vg
    }),
    col("PSIZE", &["pv_size"], R, |r, u| u.size(r.pv.size_bytes)),
    col("PFREE", &["pv_free"], R, |r, u| u.size(r.pv.free_bytes)),
    col("MDA", &[], R, |r, _| {
        format!("{}/{}", r.pv.mda_in_use, r.pv.mda_count)
    }),
    col("UUID", &["pv_uuid"], L, |r, _| r.pv.uuid.to_string()),
    col("VG_UUID", &["vg_uuid"], L, |r, _| {
        r.pv.vg_uuid.map(|u| u.to_string()).unwrap_or_default()
    }),
    col("DEVSIZE", &["dev_size"], R, |r, u| u.size(r.pv.dev_size)),
    col("PE_START", &["pe_start"], R, |r, u| u.size(r.pv.pe_start)),
    col("PE", &["pv_pe_count"], R, |r, _| r.pv.pe_count.to_string()),
    col("ALLOC", &["pv_pe_alloc_count"], R, |r, _| {
        r.pv.pe_alloc.to_string()
    }),
    col("#PMDA", &["pv_mda_count"], R, |r, _| {
        r.pv.mda_count.to_string()
    }),
    col("#PMDAUSE", &["pv_mda_used_count"], R, |r, _| {
        r.pv.mda_in_use.to_string()
    }),
];

pub(crate) const VG_COLUMNS: &[Def<VgCell>] = &[
    col("VG", &["vg_name"], L, |v, _| v.name.clone()),
    col("#PV", &["pv_count"], R, |v, _| v.pv_count.to_string()),
    col("#LV", &["lv_count"], R, |v, _| v.lv_count.to_string()),
    col("SEQ", &["vg_seqno"], R, |v, _| v.seqno.to_string()),
    col("VSIZE", &["vg_size"], R, |v, u| u.size(v.size_bytes)),
    col("VFREE", &["vg_free"], R, |v, u| u.size(v.free_bytes)),
    col("COMPLETE", &[], L, |v, _| {
        if v.complete {
            "yes".to_owned()
        } else {
            format!("no ({} missing)", v.missing.len())
        }
    }),
    col("UUID", &["vg_uuid"], L, |v, _| v.uuid.to_string()),
    col("EXT", &["vg_extent_size"], R, |v, u| u.size(v.extent_size)),
    col("#MISSING", &["vg_missing_pv_count"], R, |v, _| {
        v.missing.len().to_string()
    }),
    col("#VMDA", &["vg_mda_count"], R, |v, _| {
        v.mda_count.to_string()
    }),
    col("#VMDAUSE", &["vg_mda_used_count"], R, |v, _| {
        v.mda_used_count.to_string()
    }),
];

/// A segment's cell, empty for an LV without segments.
fn of_seg(r: &LvRow<'_>, f: impl Fn(&SegReport<DevNum>, u64) -> String) -> String {
    r.seg.map(|s| f(s, r.lv.extent_size)).unwrap_or_default()
}

pub(crate) const LV_COLUMNS: &[Def<LvCell>] = &[
    col("LV", &["lv_name"], L, |r, _| r.lv.name.clone()),
    col("VG", &["vg_name"], L, |r, _| r.lv.vg_name.clone()),
    col("ATTR", &["lv_attr"], L, |r, _| r.lv.attr.to_string()),
    col("LSIZE", &["lv_size"], R, |r, u| u.size(r.lv.size_bytes)),
    col("UUID", &["lv_uuid"], L, |r, _| r.lv.uuid.to_string()),
    col("VG_UUID", &["vg_uuid"], L, |r, _| r.lv.vg_uuid.to_string()),
    col("#SEG", &["seg_count"], R, |r, _| {
        r.lv.segments.len().to_string()
    }),
    seg("TYPE", &["segtype"], L, |r, _| {
        of_seg(r, |s, _| s.seg_type.clone())
    }),
    seg("#STR", &["stripes"], R, |r, _| {
        of_seg(r, |s, _| s.stripes.to_string())
    }),
    seg("STRIPE", &["stripe_size"], R, |r, u| {
        of_seg(r, |s, _| u.size(s.stripe_size))
    }),
    seg("START", &["seg_start"], R, |r, u| {
        of_seg(r, |s, e| u.size(s.start_extent.saturating_mul(e)))
    }),
    seg("START_PE", &["seg_start_pe"], R, |r, _| {
        of_seg(r, |s, _| s.start_extent.to_string())
    }),
    seg("SSIZE", &["seg_size"], R, |r, u| {
        of_seg(r, |s, e| u.size(s.extent_count.saturating_mul(e)))
    }),
    seg("SSIZE_PE", &["seg_size_pe"], R, |r, _| {
        of_seg(r, |s, _| s.extent_count.to_string())
    }),
    seg("DEVICES", &["devices"], L, |r, _| r.devices.clone()),
];

/// The chosen columns of one listing's table, in order, as indexes into
/// its column definitions.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Columns {
    listing: Listing,
    ids: Vec<u8>,
}

/// What parsing needs of a listing: its columns' headers and LVM names,
/// the prefixes LVM lets one leave out, and the default columns.
struct Catalog {
    name: &'static str,
    columns: Vec<(&'static str, &'static [&'static str])>,
    prefixes: &'static [&'static str],
    defaults: &'static [&'static str],
}

fn catalog(listing: Listing) -> Result<Catalog> {
    fn names<F>(defs: &[Def<F>]) -> Vec<(&'static str, &'static [&'static str])> {
        defs.iter().map(|d| (d.header, d.fields)).collect()
    }
    Ok(match listing {
        Listing::Pvs => Catalog {
            name: "weir pvs",
            columns: names(PV_COLUMNS),
            prefixes: &["pv_"],
            defaults: &["PV", "VG", "PSIZE", "PFREE", "MDA", "UUID"],
        },
        Listing::Vgs => Catalog {
            name: "weir vgs",
            columns: names(VG_COLUMNS),
            prefixes: &["vg_"],
            defaults: &["VG", "#PV", "#LV", "SEQ", "VSIZE", "VFREE", "COMPLETE"],
        },
        Listing::Lvs => Catalog {
            name: "weir lvs",
            columns: names(LV_COLUMNS),
            prefixes: &["lv_", "seg_"],
            defaults: &["LV", "VG", "ATTR", "LSIZE"],
        },
        Listing::Devices => {
            return Err(Error::NoColumns {
                listing: "weir devices",
            });
        }
    })
}

impl Catalog {
    /// The column `name` means, case-insensitively: a header, an LVM
    /// field name, or an LVM field name without one of the prefixes.
    fn find(&self, name: &str) -> Option<u8> {
        let is = |field: &str| {
            field.eq_ignore_ascii_case(name)
                || self.prefixes.iter().any(|p| {
                    field.len() == p.len() + name.len()
                        && field[..p.len()].eq_ignore_ascii_case(p)
                        && field[p.len()..].eq_ignore_ascii_case(name)
                })
        };
        let i = self
            .columns
            .iter()
            .position(|(h, fields)| h.eq_ignore_ascii_case(name) || fields.iter().any(|f| is(f)))?;
        u8::try_from(i).ok()
    }

    fn valid(&self) -> String {
        let all: Vec<String> = self
            .columns
            .iter()
            .map(|(h, fields)| match fields {
                [] => (*h).to_owned(),
                _ => format!("{h} ({})", fields.join(", ")),
            })
            .collect();
        all.join(", ")
    }
}

impl Columns {
    /// Parses `-o`: comma-separated names, or `+` and names to add to
    /// the default columns.
    pub fn parse(listing: Listing, spec: &str) -> Result<Columns> {
        let cat = catalog(listing)?;
        let (mut ids, rest) = match spec.trim().strip_prefix('+') {
            Some(rest) => (Self::defaults_of(&cat), rest),
            None => (Vec::new(), spec),
        };
        for name in rest.split(',') {
            let name = name.trim();
            if name.is_empty() {
                return Err(Error::EmptyColumn {
                    spec: spec.to_owned(),
                });
            }
            let id = cat.find(name).ok_or_else(|| Error::UnknownColumn {
                name: name.to_owned(),
                listing: cat.name,
                valid: cat.valid(),
            })?;
            if ids.len() == MAX_COLUMNS {
                return Err(Error::TooManyColumns);
            }
            ids.push(id);
        }
        Ok(Columns { listing, ids })
    }

    /// The listing's default columns.
    pub fn defaults(listing: Listing) -> Result<Columns> {
        let cat = catalog(listing)?;
        Ok(Columns {
            listing,
            ids: Self::defaults_of(&cat),
        })
    }

    fn defaults_of(cat: &Catalog) -> Vec<u8> {
        cat.defaults.iter().filter_map(|h| cat.find(h)).collect()
    }

    /// The listing these columns are for.
    pub fn listing(&self) -> Listing {
        self.listing
    }

    /// The choice as bytes, for a cache key: equal for equal choices.
    pub fn key(&self) -> &[u8] {
        &self.ids
    }

    /// The headers of the chosen columns, in order.
    pub fn headers(&self) -> Vec<&'static str> {
        let Ok(cat) = catalog(self.listing) else {
            return Vec::new();
        };
        self.ids
            .iter()
            .filter_map(|&i| cat.columns.get(usize::from(i)).map(|(h, _)| *h))
            .collect()
    }
}

/// The column indexes a table of `listing` shows: those of `cols` when
/// they are for it, else the defaults.
pub(crate) fn ids_for(listing: Listing, cols: Option<&Columns>) -> Vec<u8> {
    match cols {
        Some(c) if c.listing == listing => c.ids.clone(),
        _ => Columns::defaults(listing)
            .map(|c| c.ids)
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(listing: Listing, spec: &str) -> Vec<&'static str> {
        Columns::parse(listing, spec).unwrap().headers()
    }

    #[test]
    fn names_headers_and_lvm_fields_case_insensitively() {
        assert_eq!(
            headers(Listing::Pvs, "pv_name,PSize,vg_name"),
            ["PV", "PSIZE", "VG"]
        );
        assert_eq!(
            headers(Listing::Pvs, "name,size,uuid"),
            ["PV", "PSIZE", "UUID"]
        );
        assert_eq!(
            headers(Listing::Vgs, " name , free,#pv,vg_uuid"),
            ["VG", "VFREE", "#PV", "UUID"]
        );
        assert_eq!(
            headers(Listing::Lvs, "LV_NAME,size,attr,start,devices"),
            ["LV", "LSIZE", "ATTR", "START", "DEVICES"]
        );
        assert_eq!(
            headers(Listing::Lvs, "segtype,stripes,seg_size_pe"),
            ["TYPE", "#STR", "SSIZE_PE"]
        );
        // Repeats are allowed, as in LVM.
        assert_eq!(headers(Listing::Vgs, "vg,vg"), ["VG", "VG"]);
    }

    #[test]
    fn plus_adds_to_the_defaults() {
        assert_eq!(
            headers(Listing::Lvs, "+devices,segtype"),
            ["LV", "VG", "ATTR", "LSIZE", "DEVICES", "TYPE"]
        );
        assert_eq!(
            Columns::parse(Listing::Pvs, "+pv_pe_count")
                .unwrap()
                .headers(),
            ["PV", "VG", "PSIZE", "PFREE", "MDA", "UUID", "PE"]
        );
        assert_eq!(
            Columns::defaults(Listing::Vgs).unwrap().headers(),
            ["VG", "#PV", "#LV", "SEQ", "VSIZE", "VFREE", "COMPLETE"]
        );
    }

    #[test]
    fn refusals_say_why() {
        let e = Columns::parse(Listing::Lvs, "lv_name,nope").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "unknown column \"nope\" for weir lvs (valid columns: LV (lv_name), VG (vg_name)"
            ),
            "{msg}"
        );
        assert!(msg.contains("DEVICES (devices)"), "{msg}");
        // A field of another report is not one of this one's.
        assert!(Columns::parse(Listing::Vgs, "pv_name").is_err());
        assert!(Columns::parse(Listing::Pvs, "lv_size").is_err());
        for bad in ["", "a,,b", "+", "lv_name,"] {
            assert!(
                matches!(
                    Columns::parse(Listing::Lvs, bad),
                    Err(Error::EmptyColumn { .. } | Error::UnknownColumn { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(
            Columns::parse(Listing::Lvs, ""),
            Err(Error::EmptyColumn { .. })
        ));
        let many = vec!["lv_name"; MAX_COLUMNS + 1].join(",");
        assert_eq!(
            Columns::parse(Listing::Lvs, &many),
            Err(Error::TooManyColumns)
        );
        assert!(Columns::parse(Listing::Lvs, &many[..many.len() - 8]).is_ok());
        assert_eq!(
            Columns::parse(Listing::Devices, "name"),
            Err(Error::NoColumns {
                listing: "weir devices"
            })
        );
    }

    #[test]
    fn every_default_and_every_name_resolves_to_itself() {
        for listing in [Listing::Pvs, Listing::Vgs, Listing::Lvs] {
            let cat = catalog(listing).unwrap();
            assert_eq!(
                Columns::defaults(listing).unwrap().ids.len(),
                cat.defaults.len()
            );
            for (i, (h, fields)) in cat.columns.iter().enumerate() {
                assert_eq!(cat.find(h), Some(i as u8), "{h}");
                for f in *fields {
                    assert_eq!(cat.find(f), Some(i as u8), "{f}");
                }
            }
        }
    }
}
