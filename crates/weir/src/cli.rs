//! The command line, as clap derive types. Parsing only: no command logic.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use weir_log::{RecordType, TypeMask};
use weir_mounts::BackendChoice;

use weir_view::mounts_table::Columns;

/// weir: storage-state engine for Linux.
#[derive(Debug, Parser)]
#[command(name = "weir", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// The state directory [default: /var/lib/weir for root,
    /// $XDG_STATE_HOME/weir (or ~/.local/state/weir) otherwise].
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the daemon: host the changelog until SIGTERM or SIGINT.
    Run,
    /// Work with the changelog.
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
    /// List the mount table, or watch it change.
    Mounts(MountsArgs),
    /// List block devices (lsblk-like), or watch them and LVM's VGs change.
    Devices(DevicesArgs),
    /// List LVM physical volumes, read from the devices' labels.
    Pvs(LvmListArgs),
    /// List LVM volume groups, assembled from the devices' metadata.
    Vgs(LvmListArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum LogCommand {
    /// Append each line of stdin as a record and print its index.
    Write(WriteArgs),
    /// Print records.
    Tail(TailArgs),
    /// Manage consumers.
    Consumer {
        #[command(subcommand)]
        command: ConsumerCommand,
    },
    /// Check every record's CRC and the continuity of the index.
    Verify,
    /// Show sizes, indexes and consumers.
    Stats(JsonArg),
}

#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// Record type: a name (MARK, CREAT, ...) or a number 0-65535.
    #[arg(long = "type", value_name = "TYPE", default_value = "MARK", value_parser = parse_type)]
    pub(crate) kind: RecordType,

    /// Print an index only once its record is durable (fsynced).
    #[arg(long)]
    pub(crate) sync: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TailArgs {
    /// Start at this index [default: the oldest record, or the consumer's cursor].
    #[arg(long, value_name = "INDEX")]
    pub(crate) from: Option<u64>,

    /// Start after this consumer's cleared index and apply its mask.
    #[arg(long, value_name = "NAME")]
    pub(crate) consumer: Option<String>,

    /// Only these types, e.g. `CREAT,UNLNK,200-300` or `all,-MARK`.
    #[arg(long, value_name = "TYPES", value_parser = parse_mask)]
    pub(crate) mask: Option<TypeMask>,

    /// Keep printing records as they are written, until SIGINT or SIGTERM.
    #[arg(short = 'f', long)]
    pub(crate) follow: bool,

    /// One JSON object per line.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConsumerCommand {
    /// Register a consumer and print its id. It starts after the last record.
    Register {
        /// 1-64 characters from [A-Za-z0-9._-].
        name: String,
        /// The types it reads [default: all].
        #[arg(long, value_name = "TYPES", value_parser = parse_mask)]
        mask: Option<TypeMask>,
    },
    /// List consumers with their lag.
    List(JsonArg),
    /// Mark records up to INDEX as processed (0: everything so far).
    Clear {
        /// The consumer.
        name: String,
        /// The last processed index.
        index: u64,
    },
    /// Remove a consumer.
    Deregister {
        /// The consumer.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `weir mounts [OPTIONS]` lists; `weir mounts watch` watches. The listing
/// options belong to the listing only, hence the conflict with subcommands.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct MountsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<MountsCommand>,

    #[command(flatten)]
    pub(crate) list: MountsListArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum MountsCommand {
    /// Track the mount table in the foreground: log every change and print
    /// a line for it, until SIGINT or SIGTERM.
    Watch(MountsWatchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct MountsListArgs {
    /// Print a JSON array, one object per mount.
    #[arg(long)]
    pub(crate) json: bool,

    /// Columns, comma-separated, case-insensitive: ID, PARENT, OLD_ID,
    /// TARGET, ROOT, SOURCE, FSTYPE, OPTIONS, VFS_OPTIONS, FS_OPTIONS,
    /// PROPAGATION, MAJ:MIN.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "COLUMNS",
        default_value = "TARGET,SOURCE,FSTYPE,OPTIONS",
        value_parser = parse_columns
    )]
    pub(crate) columns: Columns,

    /// How to read the table: fanotify (listmount + statmount), mountinfo
    /// (/proc/self/mountinfo), or auto (fanotify if available).
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = backend_parser())]
    pub(crate) backend: BackendChoice,

    /// Say on stderr which backend was used, and why if it fell back.
    #[arg(short, long)]
    pub(crate) verbose: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MountsWatchArgs {
    /// How to watch: fanotify (mount events), mountinfo (re-reading
    /// /proc/self/mountinfo whenever it changes), or auto (fanotify if
    /// available).
    #[arg(long, value_name = "BACKEND", default_value = "auto", value_parser = backend_parser())]
    pub(crate) backend: BackendChoice,

    /// The share of one CPU, in percent, that whole-table readings may use.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0, value_parser = parse_percent)]
    pub(crate) budget: f64,

    /// Compare the whole table this often even when nothing announced a
    /// change (propagation changes announce nothing); 0 turns it off.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub(crate) audit_secs: u64,
}

/// `weir devices [OPTIONS]` lists; `weir devices watch` watches.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct DevicesArgs {
    #[command(subcommand)]
    pub(crate) command: Option<DevicesCommand>,

    #[command(flatten)]
    pub(crate) list: LvmListArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DevicesCommand {
    /// Track block devices in the foreground from kernel uevents: log
    /// DEVICE_*, PV_* and VG_* records and print a line for each, until
    /// SIGINT or SIGTERM.
    Watch(DevicesWatchArgs),
}

/// What `weir devices`, `weir pvs` and `weir vgs` share.
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
    /// device no pattern matches is accepted. Repeatable, in order.
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

fn backend_parser() -> impl TypedValueParser<Value = BackendChoice> {
    PossibleValuesParser::new(["auto", "fanotify", "mountinfo"])
        .try_map(|s| s.parse::<BackendChoice>())
}

fn parse_columns(s: &str) -> Result<Columns, String> {
    Columns::parse(s)
}

fn parse_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err("expected a percentage above 0 and at most 100".to_owned()),
    }
}

fn parse_type(s: &str) -> Result<RecordType, String> {
    RecordType::parse(s).map_err(|e| e.to_string())
}

fn parse_mask(s: &str) -> Result<TypeMask, String> {
    TypeMask::parse(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_tail_options() {
        let cli = Cli::try_parse_from([
            "weir", "log", "tail", "--mask", "CREAT", "-f", "--from", "7",
        ])
        .unwrap();
        let Command::Log {
            command: LogCommand::Tail(t),
        } = cli.command
        else {
            panic!("not tail: {:?}", cli.command);
        };
        assert_eq!(t.from, Some(7));
        assert!(t.follow && !t.json);
        let m = t.mask.unwrap();
        assert!(m.contains(RecordType::CREAT) && !m.contains(RecordType::MARK));
        assert!(Cli::try_parse_from(["weir", "log", "write", "--type", "NOPE"]).is_err());
    }

    #[test]
    fn parses_mounts_options() {
        let cli = Cli::try_parse_from(["weir", "mounts", "-o", "id,maj:min", "--json"]).unwrap();
        let Command::Mounts(m) = cli.command else {
            panic!("not mounts: {:?}", cli.command);
        };
        assert!(m.command.is_none() && m.list.json && !m.list.verbose);
        assert_eq!(m.list.backend, BackendChoice::Auto);
        assert_eq!(m.list.columns.0.len(), 2);

        let cli =
            Cli::try_parse_from(["weir", "mounts", "watch", "--backend", "mountinfo"]).unwrap();
        let Command::Mounts(MountsArgs {
            command: Some(MountsCommand::Watch(w)),
            ..
        }) = cli.command
        else {
            panic!("not watch: {:?}", cli.command);
        };
        assert_eq!(w.backend, BackendChoice::Mountinfo);
        assert_eq!((w.budget, w.audit_secs), (5.0, 30));

        for bad in [
            &["weir", "mounts", "--backend", "bogus"][..],
            &["weir", "mounts", "-o", "TARGET,NOPE"],
            &["weir", "mounts", "--json", "watch"],
            &["weir", "mounts", "watch", "--budget", "0"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}
