//! The options of `weir fs` (the daemon's watched directory trees, listed),
//! `weir fs watch` (the filesystem change journal in the foreground),
//! `weir fs changes` (what changed under a root since a log index) and
//! `weir fs rescan` (the daemon compares a root with the live tree).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

/// `weir fs [--json]` lists; `weir fs watch` watches. The listing's
/// option belongs to the listing only, hence the conflict with
/// subcommands (as `weir mounts` and `weir devices` have it).
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct FsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<FsCommand>,

    #[command(flatten)]
    pub(crate) list: FsListArgs,
}

#[derive(Debug, Args)]
pub(crate) struct FsListArgs {
    /// Print a JSON array, one object per watched root.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum FsCommand {
    /// Watch directory trees in the foreground: log every change to them
    /// (CREAT, UNLNK, RENME, ...) and print a line for it, until SIGINT or
    /// SIGTERM. Needs root (a fanotify filesystem mark).
    Watch(FsWatchArgs),
    /// What changed under a watched root since a log index: a line per
    /// change (`- removed`, `> from -> to`, `+ created`, `~ modified`),
    /// then `next INDEX fresh no|yes: why`; ask again with `--since` the
    /// `next` given. From the daemon when one answers, else (or with
    /// `--direct`) from the log itself.
    Changes(FsChangesArgs),
    /// Have the daemon compare a watched root with the live tree now: it
    /// reads only the directories whose times moved, logs each difference
    /// (flagged COMPARE) and the MARK `fs tree rescanned`, and prints what
    /// it found. Needs the daemon, and a peer it lets write.
    Rescan(FsRescanArgs),
}

#[derive(Debug, Args)]
pub(crate) struct FsRescanArgs {
    /// The watched root.
    #[arg(value_name = "PATH")]
    pub(crate) root: PathBuf,

    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct FsChangesArgs {
    /// The watched root.
    #[arg(value_name = "PATH")]
    pub(crate) root: PathBuf,

    /// The log index last looked at (the `next` of the previous answer;
    /// 0 for the whole log).
    #[arg(long, value_name = "INDEX")]
    pub(crate) since: u64,

    /// Print one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct FsWatchArgs {
    /// The directories to watch; roots may share a filesystem but not
    /// overlap.
    #[arg(value_name = "PATH", required = true)]
    pub(crate) roots: Vec<PathBuf>,

    /// Start afresh: do not compare a root watched before with the log's
    /// last description of it (no RECONCILED records).
    #[arg(long)]
    pub(crate) fresh: bool,

    /// Restart content-exact: besides the namespace, look at every file,
    /// and log an MTIME or SATTR (flagged RECONCILED) for those written or
    /// with attributes set while nothing watched; reads every directory.
    #[arg(long, conflicts_with = "fresh")]
    pub(crate) content: bool,

    /// Print nothing per change (the records still go to the log).
    #[arg(short, long)]
    pub(crate) quiet: bool,

    /// How often a file kept open and written gets an MTIME record, in
    /// milliseconds (a file closed after writing gets it at the close).
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) mtime_interval_ms: u64,
}

impl FsWatchArgs {
    pub(crate) fn mtime_interval(&self) -> Duration {
        Duration::from_millis(self.mtime_interval_ms)
    }
}
