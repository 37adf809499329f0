//! The command line, as clap derive types. Parsing only: no command logic.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use weir_log::{RecordType, TypeMask};
use weir_mounts::BackendChoice;

use weir_view::devices_columns::DevColumns;
use weir_view::log_select::Match;
use weir_view::lvm_columns::Columns as LvmColumns;
use weir_view::lvm_view::Listing;
use weir_view::mounts_table::Columns;

/// weir: storage-state engine for Linux.
#[derive(Debug, Parser)]
#[command(name = "weir", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// The state directory [default: /var/lib/weir for root,
    /// $XDG_STATE_HOME/weir (or ~/.local/state/weir) otherwise].
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    /// The daemon's socket [default: $WEIR_SOCKET, else /run/weir/weir.sock
    /// for root, $XDG_RUNTIME_DIR/weir.sock otherwise, and then
    /// /run/weir/weir.sock when no daemon answers there].
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) socket: Option<PathBuf>,

    /// Never ask the daemon: read the system and the log's files directly.
    #[arg(long, global = true)]
    pub(crate) direct: bool,

    /// The daemon's configuration file (TOML) [default: /etc/weir/weir.toml,
    /// when it exists]. `weir run` reads all of it; a command that opens the
    /// log itself takes its [log] settings, as the daemon would.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the daemon: host the changelog, the mount and device trackers
    /// and the API on a Unix socket, until SIGTERM or SIGINT.
    Run(Box<RunArgs>),
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
    Pvs(PvsArgs),
    /// List LVM volume groups, assembled from the devices' metadata.
    Vgs(VgsArgs),
    /// List LVM logical volumes, from their VGs' metadata.
    Lvs(LvsArgs),
    /// Wait until the daemon has logged every change made so far, and print
    /// the log index that covers them.
    Sync(JsonArg),
    /// Show the daemon's state: backends, counts, log indexes, consumers.
    /// Exits 3 when no daemon answers.
    Status(JsonArg),
}

/// `weir generate`: man pages and shell completions, for installers.
// A parser of its own, chosen in main before `Cli` parses: inside `Cli`,
// even hidden, it would be offered by the completions it writes.
#[derive(Debug, Parser)]
#[command(name = "weir generate", bin_name = "weir generate", version)]
pub(crate) struct GenerateCli {
    #[command(subcommand)]
    pub(crate) command: GenerateCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GenerateCommand {
    /// One man page per command (weir.1, weir-run.1, weir-log-tail.1, ...).
    Man {
        /// Where to write them (created if missing).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// The completion script for a shell, named as that shell looks it up
    /// (weir, _weir, weir.fish).
    Completions {
        /// bash, zsh or fish.
        #[arg(value_name = "SHELL", value_parser = PossibleValuesParser::new(["bash", "zsh", "fish"]))]
        shell: String,
        /// Where to write it (created if missing).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
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
    // A mask may start with a removal (`-MARK`), which is not an option.
    #[arg(long, visible_alias = "type", value_name = "TYPES", value_parser = parse_mask, allow_hyphen_values = true)]
    pub(crate) mask: Option<TypeMask>,

    /// Keep printing records as they are written, until SIGINT or SIGTERM.
    #[arg(short = 'f', long)]
    pub(crate) follow: bool,

    /// One JSON object per line.
    #[arg(long)]
    pub(crate) json: bool,

    /// Only the last N records that match (then stop, or follow with -f); N defaults to 10.
    // As journalctl: a bare `-n` is `-n 10`.
    #[arg(short = 'n', long = "lines", value_name = "N", num_args = 0..=1, default_missing_value = "10")]
    pub(crate) lines: Option<usize>,

    /// Jump to the end: the last 1000 records that match, unless -n says.
    #[arg(short = 'e', long)]
    pub(crate) pager_end: bool,

    /// Records at or after this time: `2025-03-01 12:00`, `today`, `-1h`, `@EPOCH`...
    #[arg(short = 'S', long, value_name = "TIME", allow_hyphen_values = true)]
    pub(crate) since: Option<String>,

    /// Records at or before this time (same syntax as --since).
    #[arg(short = 'U', long, value_name = "TIME", allow_hyphen_values = true)]
    pub(crate) until: Option<String>,

    /// Records about this mount point (MOUNT_* records naming it); repeatable.
    #[arg(long, value_name = "PATH", value_parser = parse_mount)]
    pub(crate) mount: Vec<Match>,

    /// Records about this device (`/dev/sda1`, `sda1` or `8:1`); repeatable.
    #[arg(long, value_name = "DEV", value_parser = parse_device)]
    pub(crate) device: Vec<Match>,

    /// Matches: `KEY=VALUE` on a field (`vg=vg0`), a `/dev/...` device or a
    /// mount point. The same key ORs, different keys AND.
    #[arg(value_name = "MATCH", value_parser = parse_match)]
    pub(crate) matches: Vec<Match>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConsumerCommand {
    /// Register a consumer and print its id. It starts after the last record.
    Register {
        /// 1-64 characters from [A-Za-z0-9._-].
        name: String,
        /// The types it reads [default: all].
        // As for `tail --mask`: `-MARK` is a mask, not an option.
        #[arg(long, value_name = "TYPES", value_parser = parse_mask, allow_hyphen_values = true)]
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
    pub(crate) columns: ColumnsArg,

    /// How to read the table: fanotify (listmount + statmount), mountinfo
    /// (/proc/self/mountinfo), or auto (fanotify if available) [default:
    /// auto]. Given, it reads the table directly, without the daemon.
    #[arg(long, value_name = "BACKEND", value_parser = backend_parser())]
    pub(crate) backend: Option<BackendChoice>,

    /// Say on stderr which backend was used, and why if it fell back.
    #[arg(short, long)]
    pub(crate) verbose: bool,
}

/// `-o COLUMNS`: the columns, and the words as given, which are passed on
/// to the daemon (it parses them the same way).
#[derive(Clone, Debug)]
pub(crate) struct ColumnsArg {
    /// The argument as given.
    pub(crate) text: String,
    /// The columns it names.
    pub(crate) columns: Columns,
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

/// `weir run`: every key of the configuration file as a flag
/// (`--SECTION-KEY`, `_` as `-`), laid over the file. `--config`,
/// `--state-dir` and `--socket` are the global options; the socket may also
/// come from `$WEIR_SOCKET`. Precedence: flag, environment, file, default.
#[derive(Debug, Default, Args)]
pub(crate) struct RunArgs {
    /// Print the configuration in effect (defaults, file, environment and
    /// flags) as TOML, and exit.
    #[arg(long)]
    pub(crate) print_config: bool,

    /// The group that owns the socket and may use every endpoint; "" for
    /// none (root only) [default: weir].
    #[arg(long, value_name = "NAME", help_heading = "Access")]
    pub(crate) access_group: Option<String>,
    /// Open the read-only endpoints to every local user.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Access")]
    pub(crate) access_public_read: Option<bool>,
    /// The socket's mode, in octal [default: 0660, or 0666 with
    /// public read].
    #[arg(long, value_name = "MODE", value_parser = parse_mode, help_heading = "Access")]
    pub(crate) access_socket_mode: Option<u32>,

    /// Track mounts [default: true].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Mounts")]
    pub(crate) mounts_enabled: Option<bool>,
    /// fanotify, mountinfo, or auto [default: auto].
    #[arg(long, value_name = "BACKEND", value_parser = backend_parser(), help_heading = "Mounts")]
    pub(crate) mounts_backend: Option<BackendChoice>,
    /// The share of one CPU, in percent, whole-table readings may use
    /// [default: 5].
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent, help_heading = "Mounts")]
    pub(crate) mounts_budget_percent: Option<f64>,
    /// Compare the whole table this often; 0 turns it off [default: 30].
    #[arg(long, value_name = "SECS", help_heading = "Mounts")]
    pub(crate) mounts_audit_secs: Option<u64>,

    /// Track block devices and LVM [default: true].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Devices")]
    pub(crate) devices_enabled: Option<bool>,
    /// A device filter pattern (`a|REGEX|`, `r|REGEX|`); repeatable, in
    /// order; replaces the file's list.
    #[arg(long, value_name = "PATTERN", help_heading = "Devices")]
    pub(crate) devices_filter: Vec<String>,
    /// Run `CMD VGNAME` each time a VG becomes complete; "" for none.
    #[arg(long, value_name = "CMD", help_heading = "Devices")]
    pub(crate) devices_on_vg_complete: Option<String>,

    /// Appended records reach the OS within this many ms [default: 10].
    #[arg(long, value_name = "MS", help_heading = "Log")]
    pub(crate) log_flush_ms: Option<u64>,
    /// Records are fsynced at least this often; 0 only on request
    /// [default: 5000].
    #[arg(long, value_name = "MS", help_heading = "Log")]
    pub(crate) log_sync_ms: Option<u64>,
    /// The size of each segment file [default: 8].
    #[arg(long, value_name = "MIB", help_heading = "Log")]
    pub(crate) log_segment_mib: Option<u64>,
    /// How a segment's space is reserved: auto (zeros written ahead on
    /// ext4 and xfs, for cheaper durable commits), reserve (fallocate
    /// alone) or zero_fill [default: auto].
    #[arg(long, value_name = "HOW", help_heading = "Log")]
    pub(crate) log_preallocate: Option<weir_daemon::config::Preallocate>,
    /// Slots in the append ring, a power of two [default: 65536].
    #[arg(long, value_name = "N", help_heading = "Log")]
    pub(crate) log_ring_slots: Option<u64>,
    /// The longest an append waits for room [default: 10000].
    #[arg(long, value_name = "MS", help_heading = "Log")]
    pub(crate) log_append_timeout_ms: Option<u64>,
    /// The longest the committer waits before an fsync for the durable
    /// writers the last one released; 0 never [default: 2000].
    #[arg(long, value_name = "US", help_heading = "Log")]
    pub(crate) log_group_commit_us: Option<u64>,
    /// The log's total size [default: 4096].
    #[arg(long, value_name = "MIB", help_heading = "Log")]
    pub(crate) log_max_mib: Option<u64>,
    /// Without consumers, delete segments older than this; 0 never
    /// [default: 0].
    #[arg(long, value_name = "SECS", help_heading = "Log")]
    pub(crate) log_max_age_secs: Option<u64>,
    /// The floor: segments every consumer has cleared stay while they
    /// hold any of the newest this many MiB of history (and are younger
    /// than --log-keep-age-secs); 0 deletes them once cleared
    /// [default: 256].
    #[arg(long, value_name = "MIB", help_heading = "Log")]
    pub(crate) log_keep_mib: Option<u64>,
    /// The floor's age: cleared segments older than this go; 0 no floor
    /// [default: 604800, a week].
    #[arg(long, value_name = "SECS", help_heading = "Log")]
    pub(crate) log_keep_age_secs: Option<u64>,
    /// At the size limit with lagging consumers: evict_most_idle or
    /// drop_oldest [default: evict_most_idle].
    #[arg(long, value_name = "POLICY", help_heading = "Log")]
    pub(crate) log_on_full: Option<weir_daemon::config::OnFull>,
    /// Evict a consumer this many records behind; 0 never.
    #[arg(long, value_name = "N", help_heading = "Log")]
    pub(crate) log_max_idle_records: Option<u64>,
    /// Evict a lagging consumer that has not cleared for this long; 0
    /// never [default: 30 days].
    #[arg(long, value_name = "SECS", help_heading = "Log")]
    pub(crate) log_max_idle_secs: Option<u64>,

    /// The largest request body accepted [default: 1048576].
    #[arg(long, value_name = "BYTES", help_heading = "API")]
    pub(crate) api_max_body_bytes: Option<u64>,
    /// The most `follow` streams open at once [default: 1024].
    #[arg(long, value_name = "N", help_heading = "API")]
    pub(crate) api_max_followers: Option<u64>,

    /// Rewrite the inventory checkpoint this often, when it changed
    /// [default: 5].
    #[arg(long, value_name = "SECS", help_heading = "Daemon")]
    pub(crate) daemon_checkpoint_secs: Option<u64>,
}

fn parse_mode(s: &str) -> Result<u32, String> {
    weir_daemon::config::parse_mode(s).map_err(str::to_owned)
}

fn backend_parser() -> impl TypedValueParser<Value = BackendChoice> {
    PossibleValuesParser::new(["auto", "fanotify", "mountinfo"])
        .try_map(|s| s.parse::<BackendChoice>())
}

fn parse_columns(s: &str) -> Result<ColumnsArg, String> {
    Ok(ColumnsArg {
        text: s.to_owned(),
        columns: Columns::parse(s).map_err(|e| e.to_string())?,
    })
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

fn parse_match(s: &str) -> Result<Match, String> {
    if s.starts_with("/dev/") {
        return parse_device(s);
    }
    Match::parse(s).map_err(|e| e.to_string())
}

fn parse_mount(s: &str) -> Result<Match, String> {
    Match::mount(s).map_err(|e| e.to_string())
}

/// A device path is followed to the node it names (`/dev/mapper/vg-lv` is
/// `/dev/dm-3`, the name the records carry); one that does not exist (a
/// device gone since) is taken as written.
fn parse_device(s: &str) -> Result<Match, String> {
    let resolved = s
        .starts_with("/dev/")
        .then(|| std::fs::canonicalize(s).ok())
        .flatten()
        .and_then(|p| p.to_str().map(str::to_owned))
        .filter(|p| p.starts_with("/dev/"));
    Match::device(resolved.as_deref().unwrap_or(s)).map_err(|e| e.to_string())
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

    fn tail_args(args: &[&str]) -> TailArgs {
        let cli = Cli::try_parse_from(["weir", "log", "tail"].iter().chain(args)).unwrap();
        match cli.command {
            Command::Log {
                command: LogCommand::Tail(t),
            } => t,
            other => panic!("not tail: {other:?}"),
        }
    }

    #[test]
    fn parses_journalctl_options() {
        let t = tail_args(&[
            "-n",
            "5",
            "-S",
            "-1h",
            "--until",
            "2025-03-01 12:00",
            "vg=vg0",
            "/mnt/x",
            "--device",
            "8:1",
            "--type",
            "-MARK",
        ]);
        assert_eq!(t.lines, Some(5));
        assert_eq!(t.since.as_deref(), Some("-1h"));
        assert_eq!(t.until.as_deref(), Some("2025-03-01 12:00"));
        assert_eq!(t.matches.len(), 2);
        assert_eq!(t.device, [Match::device("8:1").unwrap()]);
        assert!(!t.mask.unwrap().contains(RecordType::MARK));
        // A bare -n is -n 10, as journalctl; -e is a flag.
        assert_eq!(tail_args(&["-n"]).lines, Some(10));
        assert_eq!(tail_args(&["-e", "-f"]).lines, None);
        assert!(tail_args(&["-e"]).pager_end);
        let bad = |args: &[&str]| {
            Cli::try_parse_from(["weir", "log", "tail"].iter().chain(args)).is_err()
        };
        assert!(bad(&["-n", "x"]) && bad(&["sda1"]) && bad(&["=v"]) && bad(&["--mount", ""]));
    }

    #[test]
    fn socket_and_direct_are_global() {
        let cli = Cli::try_parse_from(["weir", "vgs", "--socket", "/tmp/s", "--direct"]).unwrap();
        assert_eq!(cli.socket.as_deref(), Some(std::path::Path::new("/tmp/s")));
        assert!(cli.direct);
        assert!(matches!(cli.command, Command::Vgs(_)));
        let cli = Cli::try_parse_from(["weir", "--socket", "/s", "status", "--json"]).unwrap();
        let Command::Status(a) = cli.command else {
            panic!("not status: {:?}", cli.command);
        };
        assert!(a.json && !cli.direct);
        assert!(matches!(
            Cli::try_parse_from(["weir", "sync"]).unwrap().command,
            Command::Sync(JsonArg { json: false })
        ));
    }

    #[test]
    fn parses_lvm_report_columns() {
        let cli =
            Cli::try_parse_from(["weir", "lvs", "-o", "+devices", "--filter", "a|x|"]).unwrap();
        let Command::Lvs(a) = cli.command else {
            panic!("not lvs: {:?}", cli.command);
        };
        let c = a.columns.unwrap();
        assert_eq!(c.text, "+devices");
        assert_eq!(
            c.columns.headers(),
            ["LV", "VG", "ATTR", "LSIZE", "DEVICES"]
        );
        assert_eq!(a.list.filter.patterns, ["a|x|"]);
        let cli = Cli::try_parse_from(["weir", "pvs", "--options", "name,size"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Pvs(PvsArgs {
                columns: Some(_),
                ..
            })
        ));
        let cli = Cli::try_parse_from(["weir", "vgs", "--output", "VG"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Vgs(VgsArgs {
                columns: Some(_),
                ..
            })
        ));
        let cli = Cli::try_parse_from(["weir", "lvs", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Lvs(LvsArgs { columns: None, .. })
        ));
        for bad in [
            &["weir", "lvs", "-o", "nope"][..],
            &["weir", "vgs", "-o", "lv_name"],
            &["weir", "pvs", "-o", ""],
            &["weir", "lvs", "-o", "lv_name", "--json"],
            &["weir", "devices", "-o", "nope"],
            &["weir", "devices", "-o", "name", "--json"],
            &["weir", "devices", "-l", "--json"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
        let e = Cli::try_parse_from(["weir", "lvs", "-o", "lv_name,nope"]).unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown column \"nope\" for weir lvs"),
            "{e}"
        );
    }

    #[test]
    fn parses_mounts_options() {
        let cli = Cli::try_parse_from(["weir", "mounts", "-o", "id,maj:min", "--json"]).unwrap();
        let Command::Mounts(m) = cli.command else {
            panic!("not mounts: {:?}", cli.command);
        };
        assert!(m.command.is_none() && m.list.json && !m.list.verbose);
        assert_eq!(m.list.backend, None, "no --backend: the daemon may answer");
        assert_eq!(m.list.columns.columns.0.len(), 2);
        assert_eq!(m.list.columns.text, "id,maj:min");

        let cli = Cli::try_parse_from(["weir", "mounts", "--backend", "auto"]).unwrap();
        let Command::Mounts(m) = cli.command else {
            panic!("not mounts: {:?}", cli.command);
        };
        assert_eq!(m.list.backend, Some(BackendChoice::Auto));
        assert_eq!(m.list.columns.text, "TARGET,SOURCE,FSTYPE,OPTIONS");

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
