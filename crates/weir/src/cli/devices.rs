//! The options of `weir devices` (lsblk's habits: `-a`, `-l`, `-o`) and
//! `weir devices watch`, and the device filter they share with the LVM
//! reports.

use clap::{Args, Subcommand};
use weir_view::devices_columns::DevColumns;

/// `weir devices [OPTIONS]` lists; `weir devices watch` watches.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct DevicesArgs {
    #[command(subcommand)]
    pub(crate) command: Option<DevicesCommand>,

    #[command(flatten)]
    pub(crate) list: LvmListArgs,

    /// List every device, also the empty ones (detached loop devices, RAM
    /// disks) and those the device filter rejects (marked `filtered` in
    /// the LVM column, `"filtered": true` in JSON), which are left out by
    /// default.
    #[arg(short = 'a', long)]
    pub(crate) all: bool,

    /// A flat list instead of the tree.
    #[arg(short = 'l', long = "list", conflicts_with = "json")]
    pub(crate) list_flat: bool,

    /// The filesystems: lsblk's -f columns that weir fills, NAME, FSTYPE,
    /// LABEL, UUID, MOUNTPOINTS (-o, if given, wins).
    #[arg(short = 'f', long = "fs", conflicts_with = "json")]
    pub(crate) fs: bool,

    /// The table's columns, comma-separated, case-insensitive: lsblk's
    /// names (NAME, KNAME, PATH, MAJ:MIN, RM, SIZE, RO, TYPE, MOUNTPOINT,
    /// MOUNTPOINTS, FSTYPE, UUID, LABEL, ROTA, LOG-SEC, BACK-FILE, MODEL,
    /// SERIAL, WWN, DISK-SEQ, PKNAME) and weir's LVM (what probing found)
    /// and VG.
    /// `+COLUMNS` adds to the default ones (NAME, MAJ:MIN, RM, SIZE, RO,
    /// TYPE, MOUNTPOINTS).
    #[arg(short = 'o', long = "output", visible_alias = "options", value_name = "COLUMNS",
          conflicts_with = "json", value_parser = parse_dev_columns)]
    pub(crate) columns: Option<DevColumnsArg>,
}

/// `-o COLUMNS` of `weir devices`: the columns, and the words as given,
/// which are passed on to the daemon (it parses them the same way).
#[derive(Clone, Debug)]
pub(crate) struct DevColumnsArg {
    /// The argument as given.
    pub(crate) text: String,
    /// The columns it names.
    pub(crate) columns: DevColumns,
}

fn parse_dev_columns(s: &str) -> Result<DevColumnsArg, String> {
    Ok(DevColumnsArg {
        text: s.to_owned(),
        columns: DevColumns::parse(s).map_err(|e| e.to_string())?,
    })
}

#[derive(Debug, Subcommand)]
pub(crate) enum DevicesCommand {
    /// Track block devices in the foreground from kernel uevents: log
    /// DEVICE_*, PV_* and VG_* records and print a line for each, until
    /// SIGINT or SIGTERM.
    Watch(DevicesWatchArgs),
}

/// What `weir devices`, `weir pvs`, `weir vgs` and `weir lvs` share.
#[derive(Debug, Args)]
pub(crate) struct LvmListArgs {
    /// Print a JSON array, one object per row.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) filter: FilterArgs,
}

/// Which devices are scanned, in lvm.conf's devices/filter syntax.
#[derive(Debug, Args)]
pub(crate) struct FilterArgs {
    /// A device filter pattern, `a|REGEX|` to accept or `r|REGEX|` to
    /// reject, matched against /dev/NAME; the first match decides, and a
    /// device no pattern matches is accepted. Repeatable, in order. Given,
    /// the devices are read directly, without the daemon.
    #[arg(long = "filter", value_name = "PATTERN")]
    pub(crate) patterns: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DevicesWatchArgs {
    /// Run `CMD VGNAME` each time a VG becomes complete (for example
    /// `vgchange -aay --autoactivation event`), and log its exit status.
    /// CMD is split on whitespace; no shell is involved.
    #[arg(long, value_name = "CMD")]
    pub(crate) on_vg_complete: Option<String>,

    #[command(flatten)]
    pub(crate) filter: FilterArgs,
}
