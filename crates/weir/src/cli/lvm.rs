//! The options of `weir pvs`, `weir vgs` and `weir lvs`: LVM's `-o`,
//! `--units` and `--nosuffix`.

use clap::Args;
use weir_view::lvm_columns::Columns as LvmColumns;
use weir_view::lvm_units::Units;
use weir_view::lvm_view::Listing;

use super::LvmListArgs;

/// `weir pvs`.
#[derive(Debug, Args)]
pub(crate) struct PvsArgs {
    #[command(flatten)]
    pub(crate) list: LvmListArgs,

    /// The table's columns, comma-separated, case-insensitive: LVM's field
    /// names (pv_name, vg_name, pv_size, pv_free, pv_uuid, vg_uuid,
    /// dev_size, pe_start, pv_pe_count, pv_pe_alloc_count, pv_mda_count,
    /// pv_mda_used_count; `pv_` may be left out) or the headers (PV, VG,
    /// PSIZE, PFREE, MDA, UUID, ...). `+COLUMNS` adds to the default ones.
    #[arg(short = 'o', long = "options", visible_alias = "output", value_name = "COLUMNS",
          conflicts_with = "json", value_parser = parse_pv_columns)]
    pub(crate) columns: Option<LvmColumnsArg>,

    #[command(flatten)]
    pub(crate) units: UnitsArgs,
}

/// `weir vgs`.
#[derive(Debug, Args)]
pub(crate) struct VgsArgs {
    #[command(flatten)]
    pub(crate) list: LvmListArgs,

    /// The table's columns, comma-separated, case-insensitive: LVM's field
    /// names (vg_name, pv_count, lv_count, vg_seqno, vg_size, vg_free,
    /// vg_uuid, vg_extent_size, vg_missing_pv_count, vg_mda_count,
    /// vg_mda_used_count; `vg_` may be left out) or the headers (VG, #PV,
    /// #LV, SEQ, VSIZE, VFREE, COMPLETE, ...). `+COLUMNS` adds to the
    /// default ones.
    #[arg(short = 'o', long = "options", visible_alias = "output", value_name = "COLUMNS",
          conflicts_with = "json", value_parser = parse_vg_columns)]
    pub(crate) columns: Option<LvmColumnsArg>,

    #[command(flatten)]
    pub(crate) units: UnitsArgs,
}

/// `weir lvs`.
#[derive(Debug, Args)]
pub(crate) struct LvsArgs {
    #[command(flatten)]
    pub(crate) list: LvmListArgs,

    /// The table's columns, comma-separated, case-insensitive: LVM's field
    /// names (lv_name, vg_name, lv_attr, lv_size, lv_uuid, vg_uuid,
    /// seg_count, and per segment segtype, stripes, stripe_size,
    /// seg_start, seg_start_pe, seg_size, seg_size_pe, devices; `lv_` and
    /// `seg_` may be left out) or the headers (LV, VG, ATTR, LSIZE, ...).
    /// `+COLUMNS` adds to the default ones (`-o +devices`). A segment's
    /// column makes a row per segment, as in LVM.
    #[arg(short = 'o', long = "options", visible_alias = "output", value_name = "COLUMNS",
          conflicts_with = "json", value_parser = parse_lv_columns)]
    pub(crate) columns: Option<LvmColumnsArg>,

    #[command(flatten)]
    pub(crate) units: UnitsArgs,
}

/// LVM's `--units` and `--nosuffix`, for the sizes in a report's table.
#[derive(Debug, Args)]
pub(crate) struct UnitsArgs {
    /// How sizes are printed, as LVM prints them: r (the default) or h
    /// for the largest unit that fits in powers of 1024 (R, H: of 1000;
    /// r marks a value rounded up with `<`), b bytes, s sectors, k m g t p
    /// e (powers of 1024) or K M G T P E (of 1000), optionally after a
    /// number (4m).
    #[arg(long, value_name = "UNITS", conflicts_with = "json", value_parser = parse_units)]
    pub(crate) units: Option<UnitsArg>,

    /// Sizes without their unit's letter (but in r, R, h and H, as in
    /// LVM).
    #[arg(long, conflicts_with = "json")]
    pub(crate) nosuffix: bool,
}

impl UnitsArgs {
    /// The units these arguments choose.
    pub(crate) fn units(&self) -> Units {
        let units = self.units.as_ref().map_or_else(Units::default, |u| u.units);
        if self.nosuffix {
            units.without_suffix()
        } else {
            units
        }
    }
}

/// `--units UNITS`: the units, and the word as given, which is passed on
/// to the daemon (it parses it the same way).
#[derive(Clone, Debug)]
pub(crate) struct UnitsArg {
    /// The argument as given.
    pub(crate) text: String,
    /// The units it names.
    pub(crate) units: Units,
}

/// `-o COLUMNS` of an LVM report: the columns, and the words as given,
/// which are passed on to the daemon (it parses them the same way).
#[derive(Clone, Debug)]
pub(crate) struct LvmColumnsArg {
    /// The argument as given.
    pub(crate) text: String,
    /// The columns it names.
    pub(crate) columns: LvmColumns,
}

fn parse_lvm_columns(listing: Listing, s: &str) -> Result<LvmColumnsArg, String> {
    Ok(LvmColumnsArg {
        text: s.to_owned(),
        columns: LvmColumns::parse(listing, s).map_err(|e| e.to_string())?,
    })
}

fn parse_pv_columns(s: &str) -> Result<LvmColumnsArg, String> {
    parse_lvm_columns(Listing::Pvs, s)
}

fn parse_vg_columns(s: &str) -> Result<LvmColumnsArg, String> {
    parse_lvm_columns(Listing::Vgs, s)
}

fn parse_lv_columns(s: &str) -> Result<LvmColumnsArg, String> {
    parse_lvm_columns(Listing::Lvs, s)
}

fn parse_units(s: &str) -> Result<UnitsArg, String> {
    Ok(UnitsArg {
        text: s.to_owned(),
        units: Units::parse(s).map_err(|e| e.to_string())?,
    })
}
