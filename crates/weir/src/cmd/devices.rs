//! `weir devices`: the block devices as lsblk lists them, from the daemon's
//! inventory and mount table when one answers (and no `--filter` is given),
//! otherwise from one scan of every block device and a read of the mount
//! table here. Both paths render with `weir_view::devices_view::render`,
//! so the bytes are the same.

use std::io::Write;

use anyhow::{Context, Result};
use weir_client::PathQuery;
use weir_devices::{Inventory, Sysfs};
use weir_mounts::BackendChoice;
use weir_view::devices_columns::{DevColumns, FS};
use weir_view::devices_view::{self, DevicesOptions};
use weir_view::lvm_view::Format;

use crate::cli::DevicesArgs;
use crate::daemon::{Route, copy_listing};

pub(super) fn list(route: &Route, args: &DevicesArgs) -> Result<()> {
    // The daemon scans with its own filter: a --filter asks for a scan here.
    if args.list.filter.patterns.is_empty()
        && let Some(mut client) = route.client()?
        && via_daemon(&mut client, args)?
    {
        return Ok(());
    }
    let filter = super::lvm::filter(&args.list.filter)?;
    let (inv, _) = Inventory::scan(Sysfs::default(), filter).context("reading block devices")?;
    // As the daemon does: a table that cannot be read shows no mount points.
    let mounts = weir_mounts::snapshot(BackendChoice::Mountinfo)
        .map(|s| s.mounts)
        .unwrap_or_default();
    let options = DevicesOptions {
        all: args.all,
        list: args.list_flat,
        columns: match (&args.columns, args.fs) {
            (Some(c), _) => c.columns.clone(),
            (None, true) => DevColumns(FS.to_vec()),
            (None, false) => DevColumns::default(),
        },
    };
    let format = if args.list.json {
        Format::Json
    } else {
        Format::Text
    };
    let text = devices_view::render(&inv, &mounts, &options, format);
    let mut out = crate::stdout::lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The listing from the daemon; `Ok(false)` when its device tracker is off.
/// Only what differs from the defaults is asked for.
fn via_daemon(client: &mut weir_client::Client, args: &DevicesArgs) -> Result<bool> {
    let format = if args.list.json { "json" } else { "text" };
    let mut target = PathQuery::new("/v1/devices").param("format", format);
    if args.all {
        target = target.param("all", "true");
    }
    if args.list_flat {
        target = target.param("list", "true");
    }
    if let Some(c) = &args.columns {
        target = target.param("columns", &c.text);
    } else if args.fs {
        target = target.param("columns", DevColumns(FS.to_vec()).headers().join(","));
    }
    copy_listing(client, &target, "block devices")
}
