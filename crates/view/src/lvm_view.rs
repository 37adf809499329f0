//! The one renderer of `weir devices`, `weir pvs`, `weir vgs` and
//! `weir lvs`: an inventory, a listing, a format and the table's columns
//! in, the bytes out. The CLI calls it on its own scan and the daemon on
//! its tracker's inventory, so the two print the same bytes by
//! construction, sorting and device paths included.

use weir_devices::{DevNum, Inventory};
use weir_lvm::assembly::PvReport;

use crate::devices_view::DevicesOptions;
use crate::error::{Error, Result};
use crate::lvm_columns::Columns;
use crate::lvm_units::Units;
use crate::{lvm_json, lvm_table};

/// What is listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Listing {
    /// `weir devices`: the block devices, rendered by
    /// [`devices_view::render`](crate::devices_view::render).
    Devices,
    /// `weir pvs`.
    Pvs,
    /// `weir vgs`.
    Vgs,
    /// `weir lvs`.
    Lvs,
}

impl Listing {
    /// The command that prints it: `weir lvs`.
    pub fn command(self) -> &'static str {
        match self {
            Listing::Devices => "weir devices",
            Listing::Pvs => "weir pvs",
            Listing::Vgs => "weir vgs",
            Listing::Lvs => "weir lvs",
        }
    }
}

/// The form of a listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// A JSON array, one object per line; every field, whatever the
    /// columns.
    Json,
    /// The table.
    Text,
}

/// How a report's table is laid out: `-o`'s columns (`None`: the
/// default ones) and `--units` with `--nosuffix`. The JSON form has every
/// field, in bytes, and ignores both.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TextOptions {
    /// The table's columns.
    pub columns: Option<Columns>,
    /// How its sizes are printed.
    pub units: Units,
}

/// What `weir devices|pvs|vgs|lvs [--json] [-o COLUMNS] [--units U]`
/// prints for this inventory.
pub fn render(
    inv: &Inventory,
    what: Listing,
    format: Format,
    text: &TextOptions,
) -> Result<String> {
    if let Some(c) = &text.columns
        && c.listing() != what
    {
        return Err(Error::OtherListing {
            listing: what.command(),
            columns: c.listing().command(),
        });
    }
    let path = |dn: DevNum| {
        inv.get(dn).map_or_else(
            || dn.to_string(),
            |e| e.device.dev_path().display().to_string(),
        )
    };
    Ok(match (what, format) {
        // Without a mount table: `devices_view::render` is the listing.
        (Listing::Devices, format) => {
            crate::devices_view::render(inv, &[], &DevicesOptions::default(), format)
        }
        (Listing::Vgs, Format::Json) => lvm_json::vgs_json(&inv.vgs()),
        (Listing::Vgs, Format::Text) => lvm_table::vgs_table(&inv.vgs(), text),
        (Listing::Pvs, Format::Json) => lvm_json::pvs_json(&sorted_pvs(inv, &path), path),
        (Listing::Pvs, Format::Text) => lvm_table::pvs_table(&sorted_pvs(inv, &path), path, text),
        (Listing::Lvs, Format::Json) => lvm_json::lvs_json(&inv.lvs(), path),
        (Listing::Lvs, Format::Text) => lvm_table::lvs_table(&inv.lvs(), path, text),
    })
}

/// PVs sorted by device path, as LVM sorts them.
fn sorted_pvs(inv: &Inventory, path: &impl Fn(DevNum) -> String) -> Vec<PvReport<DevNum>> {
    let mut pvs = inv.pvs();
    pvs.sort_by_cached_key(|p| path(p.device));
    pvs
}
