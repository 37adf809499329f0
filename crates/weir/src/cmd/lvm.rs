//! `weir devices`, `weir pvs` and `weir vgs`: the daemon's inventory, from
//! memory, when one answers (and no `--filter` is given); otherwise one
//! scan of every block device, read in parallel with `O_DIRECT` (a label
//! and the mda headers per device, each distinct metadata text once).
//! Shown as a table or a JSON array, the same bytes either way.
//!
//! A device that cannot be opened or read is listed with the reason (in
//! `weir devices`, and, when scanning here, as a warning on stderr); it
//! never fails the command.

use std::io::Write;

use anyhow::{Context, Result};
use weir_devices::sysfs::Detail;
use weir_devices::{DevNum, Filter, Inventory, Probe, Sysfs};

use weir_client::PathQuery;

use crate::cli::{FilterArgs, LvmListArgs};
use crate::daemon::{Route, copy_listing};
use weir_view::{lvm_json, lvm_table as lvm_view};

/// What is listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Listing {
    Devices,
    Pvs,
    Vgs,
}

pub(super) fn list(route: &Route, what: Listing, args: &LvmListArgs) -> Result<()> {
    // The daemon scans with its own filter: a --filter asks for a scan here.
    if args.filter.patterns.is_empty()
        && let Some(mut client) = route.client()?
        && via_daemon(&mut client, what, args.json)?
    {
        return Ok(());
    }
    // pvs and vgs need only what probing needs from sysfs.
    let detail = match what {
        Listing::Devices => Detail::Full,
        Listing::Pvs | Listing::Vgs => Detail::Probe,
    };
    let inv = scan(&args.filter, detail)?;
    if what != Listing::Devices {
        warn_unreadable(&inv);
    }
    let path = |dn: DevNum| {
        inv.get(dn).map_or_else(
            || dn.to_string(),
            |e| e.device.dev_path().display().to_string(),
        )
    };
    let text = match (what, args.json) {
        (Listing::Vgs, true) => lvm_json::vgs_json(&inv.vgs()),
        (Listing::Vgs, false) => lvm_view::vgs_table(&inv.vgs()),
        (Listing::Pvs, true) => lvm_json::pvs_json(&sorted_pvs(&inv, &path), path),
        (Listing::Pvs, false) => lvm_view::pvs_table(&sorted_pvs(&inv, &path), path),
        (Listing::Devices, true) => lvm_json::devices_json(&inv),
        (Listing::Devices, false) => lvm_view::devices_table(&inv),
    };
    let mut out = crate::stdout::lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The listing from the daemon; `Ok(false)` when its device tracker is off.
fn via_daemon(client: &mut weir_client::Client, what: Listing, json: bool) -> Result<bool> {
    let (path, name) = match what {
        Listing::Devices => ("/v1/devices", "block devices"),
        Listing::Pvs => ("/v1/lvm/pvs", "LVM physical volumes"),
        Listing::Vgs => ("/v1/lvm/vgs", "LVM volume groups"),
    };
    let format = if json { "json" } else { "text" };
    copy_listing(client, &PathQuery::new(path).param("format", format), name)
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

/// PVs sorted by device path, as LVM sorts them.
fn sorted_pvs(
    inv: &Inventory,
    path: &impl Fn(DevNum) -> String,
) -> Vec<weir_lvm::assembly::PvReport<DevNum>> {
    let mut pvs = inv.pvs();
    pvs.sort_by_cached_key(|p| path(p.device));
    pvs
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
