//! `weir`: the daemon (`weir run`) and the command-line tools (`weir log ...`,
//! `weir mounts ...`).
//!
//! This binary is glue: argument parsing lives in `cli`, the state directory
//! in `state_dir`, the choice between asking the daemon and working
//! directly in `daemon`, and each command family in its own module under
//! `cmd`. Every error ends here, printed as `weir: error: <message>:
//! <cause>...` with exit status 1; usage errors exit 2 (clap's convention);
//! `weir status` and `weir fs` without a daemon exit 3.
#![forbid(unsafe_code)]

#[cfg(test)]
mod chain_tests;
mod cli;
mod cmd;
mod config_file;
mod daemon;
mod signals;
mod state_dir;
mod stdout;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // `weir generate ...` (for installers) has a parser of its own, so the
    // man pages and completions it writes never mention it.
    if std::env::args_os().nth(1).is_some_and(|a| a == "generate") {
        let args = cli::GenerateCli::parse_from(std::env::args_os().skip(1));
        return match cmd::generate::generate(args.command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weir: error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let cli = cli::Cli::parse();
    init_tracing(&cli.command);
    match cmd::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // A reader of stdout that went away (`weir log tail | head`) is not
        // an error. Only stdout's broken pipe: the daemon's socket breaking
        // is one. `log write` turns its own into an error (it stops appending).
        Err(e) if stdout::is_closed(&e) => ExitCode::SUCCESS,
        // `weir status` (or `weir fs`) without a daemon: status 3, as
        // `systemctl status` gives for a unit that is not running.
        Err(e) if e.downcast_ref::<cmd::NoDaemon>().is_some() => {
            eprintln!("weir: {e}");
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("weir: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr. The daemon reports at `info` by default; the one-shot
/// commands only at `warn`, so their stdout and stderr stay quiet.
/// `RUST_LOG` overrides both.
fn init_tracing(command: &cli::Command) {
    let default = match command {
        cli::Command::Run(_) | cli::Command::Ship(_) => "info",
        cli::Command::Log { .. } => "warn",
        cli::Command::Mounts(m) => match m.command {
            Some(cli::MountsCommand::Watch(_)) => "info",
            None => "warn",
        },
        cli::Command::Devices(d) => match d.command {
            Some(cli::DevicesCommand::Watch(_)) => "info",
            None => "warn",
        },
        cli::Command::Fs(f) => match f.command {
            Some(cli::FsCommand::Watch(_)) => "info",
            Some(cli::FsCommand::Changes(_) | cli::FsCommand::Rescan(_)) | None => "warn",
        },
        cli::Command::Pvs(_)
        | cli::Command::Vgs(_)
        | cli::Command::Lvs(_)
        | cli::Command::Sync(_)
        | cli::Command::Status(_)
        | cli::Command::Fleet(_) => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal, not in a file or journal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
