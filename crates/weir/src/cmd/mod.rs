//! The commands, one module per family, and the dispatch from parsed
//! arguments to them.

mod devices;
mod devices_watch;
mod foreground;
mod fs;
mod fs_watch;
pub(crate) mod generate;
mod log_consumer;
mod log_stats;
mod log_tail;
mod log_verify;
mod log_write;
mod lvm;
mod mounts;
mod mounts_watch;
mod run;
mod ship;
mod status;
mod sync;

pub(crate) use status::NoDaemon;

use anyhow::Result;
use weir_view::lvm_view::Listing;

use crate::cli::{
    Cli, Command, DevicesCommand, FleetCommand, FsCommand, LogCommand, MountsCommand,
};
use crate::daemon::Route;
use crate::state_dir::StateDir;

/// Runs the command `cli` names.
pub(crate) fn dispatch(cli: Cli) -> Result<()> {
    // Resolved up front but checked only by the commands that use it:
    // listing mounts needs no state directory, nor $HOME to find one.
    // `weir run` lays its configuration file between these flags and the
    // defaults, so it takes them as given.
    let run_paths = (cli.state_dir.clone(), cli.socket.clone());
    let route = Route::new(cli.socket, cli.direct, cli.state_dir.clone());
    let state = StateDir::resolve(cli.state_dir).map(|s| s.with_config(cli.config.clone()));
    match cli.command {
        Command::Run(a) => run::run(&a, cli.config.as_deref(), run_paths.0, run_paths.1),
        Command::Log { command } => {
            let state = state?;
            match command {
                LogCommand::Write(a) => log_write::write(&route, &state, &a),
                LogCommand::Tail(a) => log_tail::tail(&route, &state, a),
                LogCommand::Consumer { command } => log_consumer::consumer(&route, &state, command),
                LogCommand::Verify => log_verify::verify(&state),
                LogCommand::Stats(a) => log_stats::stats(&route, &state, a.json),
            }
        }
        Command::Mounts(m) => match m.command {
            None => mounts::list(&route, &m.list),
            Some(MountsCommand::Watch(a)) => mounts_watch::watch(&state?, &a),
        },
        Command::Devices(d) => match d.command {
            None => devices::list(&route, &d),
            Some(DevicesCommand::Watch(a)) => devices_watch::watch(&state?, &a),
        },
        Command::Fs(f) => match f.command {
            None => fs::list(&route, &f.list),
            Some(FsCommand::Watch(a)) => fs_watch::watch(&state?, &a),
            Some(FsCommand::Changes(a)) => fs::changes(&route, &state?, &a),
            Some(FsCommand::Rescan(a)) => fs::rescan(&route, &a),
        },
        Command::Pvs(a) => lvm::list(&route, Listing::Pvs, &a.list, a.columns.as_ref(), &a.units),
        Command::Vgs(a) => lvm::list(&route, Listing::Vgs, &a.list, a.columns.as_ref(), &a.units),
        Command::Lvs(a) => lvm::list(&route, Listing::Lvs, &a.list, a.columns.as_ref(), &a.units),
        Command::Sync(a) => sync::sync(&route, a.json),
        Command::Status(a) => status::status(&route, a.json),
        Command::Ship(a) => ship::ship(&state?, &a),
        Command::Fleet(f) => match f.command {
            FleetCommand::Tail(a) => ship::fleet_tail(&a),
            FleetCommand::Status(a) => ship::fleet_status(&a),
        },
    }
}

/// Wall-clock time in ns since the Unix epoch, as the log stamps records.
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
