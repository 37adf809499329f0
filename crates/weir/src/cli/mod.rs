//! The command line, as clap derive types. Parsing only: no command logic.
//!
//! `Cli` and its commands are here; each command's options are in the
//! module of its concern, re-exported so that commands name them all as
//! `crate::cli::X`.

mod devices;
mod fs;
mod log;
mod lvm;
mod mounts;
mod run;
mod ship;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use weir_mounts::BackendChoice;

pub(crate) use devices::{DevicesArgs, DevicesCommand, DevicesWatchArgs, FilterArgs, LvmListArgs};
pub(crate) use fs::{FsArgs, FsChangesArgs, FsCommand, FsListArgs, FsRescanArgs, FsWatchArgs};
pub(crate) use log::{ConsumerCommand, LogCommand, TailArgs, WriteArgs};
pub(crate) use lvm::{LvmColumnsArg, LvsArgs, PvsArgs, UnitsArgs, VgsArgs};
pub(crate) use mounts::{MountsArgs, MountsCommand, MountsListArgs, MountsWatchArgs};
pub(crate) use run::RunArgs;
pub(crate) use ship::{
    BrokerArgs, FleetArgs, FleetCommand, FleetStatusArgs, FleetTailArgs, ShipArgs,
};

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
    /// Run the daemon: host the changelog, the mount, device and
    /// filesystem trackers and the API on a Unix socket, until SIGTERM or
    /// SIGINT.
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
    /// The change journal of directory trees (fanotify with file ids):
    /// list the trees the daemon watches, or watch trees in the
    /// foreground.
    Fs(FsArgs),
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
    /// Ship the changelog to NATS JetStream in the foreground, exactly
    /// once, resuming after the last record the broker holds, until
    /// SIGINT or SIGTERM.
    Ship(Box<ShipArgs>),
    /// Read the fleet's records back from the broker.
    Fleet(FleetArgs),
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

#[derive(Debug, Args)]
pub(crate) struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn backend_parser() -> impl TypedValueParser<Value = BackendChoice> {
    PossibleValuesParser::new(["auto", "fanotify", "mountinfo"])
        .try_map(|s| s.parse::<BackendChoice>())
}

pub(super) fn parse_percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err("expected a percentage above 0 and at most 100".to_owned()),
    }
}
