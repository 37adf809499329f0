//! `weir pvs`, `weir vgs` and `weir lvs` (`weir devices` is in `devices`,
//! which shares the filter): the daemon's
//! inventory, from memory, when one answers (and no `--filter` is given);
//! otherwise one scan of every block device, read in parallel with
//! `O_DIRECT` (a label and the mda headers per device, each distinct
//! metadata text once). Shown as a table (with `-o`'s columns) or a JSON
//! array, rendered by `weir_view::lvm_view::render` on either path, so the
//! bytes are the same.
//!
//! A device that cannot be opened or read is reported, when scanning
//! here, as a warning on stderr; it never fails the command.

use std::io::Write;

use anyhow::{Context, Result};
use weir_devices::sysfs::Detail;
use weir_devices::{Filter, Inventory, Probe, Sysfs};

use weir_client::PathQuery;

use crate::cli::{FilterArgs, LvmColumnsArg, LvmListArgs, UnitsArgs};
use crate::daemon::{Route, copy_listing};
use weir_view::lvm_view::{self, Format, Listing, TextOptions};

pub(super) fn list(
    route: &Route,
    what: Listing,
    args: &LvmListArgs,
    columns: Option<&LvmColumnsArg>,
    units: &UnitsArgs,
) -> Result<()> {
    // The daemon scans with its own filter: a --filter asks for a scan here.
    if args.filter.patterns.is_empty()
        && let Some(mut client) = route.client()?
        && via_daemon(&mut client, what, args.json, columns, units)?
    {
        return Ok(());
    }
    // pvs, vgs and lvs need only what probing needs from sysfs.
    let detail = match what {
        Listing::Devices => Detail::Full,
        Listing::Pvs | Listing::Vgs | Listing::Lvs => Detail::Probe,
    };
    let inv = scan(&args.filter, detail)?;
    if what != Listing::Devices {
        warn_unreadable(&inv);
    }
    let format = if args.json {
        Format::Json
    } else {
        Format::Text
    };
    let text_options = TextOptions {
        columns: columns.map(|c| c.columns.clone()),
        units: units.units(),
    };
    let text = lvm_view::render(&inv, what, format, &text_options)?;
    let mut out = crate::stdout::lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The listing from the daemon; `Ok(false)` when its device tracker is off.
fn via_daemon(
    client: &mut weir_client::Client,
    what: Listing,
    json: bool,
    columns: Option<&LvmColumnsArg>,
    units: &UnitsArgs,
) -> Result<bool> {
    let (path, name) = match what {
        Listing::Devices => ("/v1/devices", "block devices"),
        Listing::Pvs => ("/v1/lvm/pvs", "LVM physical volumes"),
        Listing::Vgs => ("/v1/lvm/vgs", "LVM volume groups"),
        Listing::Lvs => ("/v1/lvm/lvs", "LVM logical volumes"),
    };
    let format = if json { "json" } else { "text" };
    let mut target = PathQuery::new(path).param("format", format);
    if let Some(c) = columns {
        target = target.param("columns", &c.text);
    }
    if let Some(u) = &units.units {
        target = target.param("units", &u.text);
    }
    if units.nosuffix {
        target = target.param("nosuffix", "true");
    }
    copy_listing(client, &target, name)
}

/// The filter the arguments give.
pub(super) fn filter(args: &FilterArgs) -> Result<Filter> {
    Filter::parse(&args.patterns).context("--filter")
}

fn scan(args: &FilterArgs, detail: Detail) -> Result<Inventory> {
    let (inv, _) = Inventory::scan_with(Sysfs::default(), filter(args)?, detail)
        .context("reading block devices")?;
    Ok(inv)
}

/// Devices that could not be read, said once each on stderr: a PV among
/// them would be missing from the listing.
fn warn_unreadable(inv: &Inventory) {
    for e in inv.devices() {
        if let Probe::Failed(err) = &e.probe {
            eprintln!(
                "weir: warning: {}: {}",
                e.device.dev_path().display(),
                weir_view::chain::error_chain(err.as_ref())
            );
        }
    }
    for (name, err) in inv.unreadable() {
        eprintln!(
            "weir: warning: {name}: {}",
            weir_view::chain::error_chain(err)
        );
    }
}
