//! The options of `weir log`: writing, tailing (journalctl's choices:
//! `-n`, `-e`, `--since`, `--until`, matches; and `--path`, a subtree of
//! the watched directory trees) and the consumers.

use std::os::unix::ffi::OsStrExt;

use clap::builder::{OsStringValueParser, TypedValueParser};
use clap::{Args, Subcommand};
use weir_log::{RecordType, TypeMask};
use weir_view::log_select::{Match, PathPrefix};

use super::JsonArg;

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

    /// Records about this subtree of the watched directory trees: those
    /// whose `path` (or, for a rename, `spath`) is PREFIX or under it,
    /// by whole components; relative to the root, as records hold paths.
    #[arg(long, value_name = "PREFIX", value_parser = path_parser())]
    pub(crate) path: Option<PathPrefix>,

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

fn parse_type(s: &str) -> Result<RecordType, String> {
    RecordType::parse(s).map_err(|e| e.to_string())
}

pub(super) fn parse_mask(s: &str) -> Result<TypeMask, String> {
    TypeMask::parse(s).map_err(|e| e.to_string())
}

fn parse_match(s: &str) -> Result<Match, String> {
    if s.starts_with("/dev/") {
        return parse_device(s);
    }
    Match::parse(s).map_err(|e| e.to_string())
}

/// Any bytes: a path need not be UTF-8, and every prefix is one.
fn path_parser() -> impl TypedValueParser<Value = PathPrefix> {
    OsStringValueParser::new().map(|s| PathPrefix::new(s.as_bytes()))
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
