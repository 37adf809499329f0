//! Hosting the daemon: everything `weir run` does between its arguments
//! and its exit.
//!
//! [`run`] sets up in this order, and undoes it in reverse:
//!
//! 1. the async runtime and the SIGTERM/SIGINT handlers (`signals`);
//! 2. the socket (`socket`): passed by systemd, or bound, refusing to
//!    start when another daemon answers on it;
//! 3. the log in `<state-dir>/log` (its writer lock makes this the only
//!    daemon on that state directory), and a `weir started` MARK;
//! 4. the last run's inventory (`previous`) and the trackers started from
//!    it (`sources`), which log what changed while no daemon watched; the
//!    filesystem tracker, when `[fs] watch` names roots, resumes from the
//!    log's own description of each tree instead;
//! 5. the shipper (`ship`), when `[ship]` names a server;
//! 6. the checkpointer (`checkpointer`), the API server, the watchdog
//!    (`health`), then `READY=1`.
//!
//! On a signal: `STOPPING=1`, the server stops, the shipper and the
//! trackers stop, the
//! final checkpoint is written (`clean`), a `weir stopped` MARK, and the
//! log closes durably. A tracker or the server failing on its own stops the
//! daemon the same way, with an error (and a non-zero exit), so that the
//! service manager restarts it; the restart reconciles what it missed.

mod checkpointer;
mod group;
mod health;
mod marks;
mod previous;
mod running;
mod ship;
mod signals;
mod socket;
mod sources;

use std::path::Path;
use std::sync::Arc;

use tracing::{error, info, warn};
use weir_log::Log;

use crate::config::{Config, ConfigError};
use crate::{Error, Result};
use marks::Cause;
use running::Ended;

/// The log's subdirectory of the state directory.
pub const LOG_SUBDIR: &str = "log";

/// Creates the state directory if it is missing. A path that exists but
/// is not a directory is refused by name: `create_dir_all` would only say
/// "File exists".
fn make_state_dir(path: &std::path::Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() => Err(Error::StateDirNotDir {
            path: path.to_owned(),
        }),
        _ => std::fs::create_dir_all(path).map_err(|source| Error::StateDir {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Runs the daemon until SIGTERM or SIGINT, then stops it cleanly. Returns
/// `Ok` after a clean stop; an error when it could not start, or when a
/// part of it failed while it ran or stopped.
///
/// `config.state_dir` and `config.socket` must be set (the binary fills in
/// their defaults).
pub fn run(config: Config) -> Result<()> {
    config.validate()?;
    let state_dir = config
        .state_dir
        .clone()
        .ok_or(ConfigError::Missing { key: "state_dir" })?;
    let socket_path = config
        .socket
        .clone()
        .ok_or(ConfigError::Missing { key: "socket" })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        // The API's work is small and mostly waits: two workers are plenty,
        // and blocking calls (sync) go to the blocking pool.
        .worker_threads(2)
        .thread_name("weir-api")
        .enable_all()
        .build()
        .map_err(|source| Error::Runtime {
            what: "starting the async runtime",
            source,
        })?;
    let mut signals = {
        let _in_runtime = runtime.enter();
        signals::Signals::install()?
    };
    // The state directory before the socket: a daemon that cannot keep
    // state must not be seen listening first.
    make_state_dir(&state_dir)?;
    let listener = socket::open(&socket_path, &config.access)?;
    let log = Arc::new(open_log(&state_dir.join(LOG_SUBDIR), &config)?);
    let started = marks::started(&log)?;
    info!(index = started, pid = std::process::id(), "weir started");

    let (cause, result) =
        match running::Running::start(&config, &state_dir, &log, listener, &runtime) {
            Ok(mut r) => match r.wait(&runtime, &mut signals) {
                Ended::Signal(name) => {
                    info!(signal = name, "stopping on a signal");
                    (Cause::Signal(name), r.stop(runtime, &log))
                }
                Ended::Failed(e) => {
                    let cause = Cause::Failure(weir_view::chain::error_chain(&e));
                    // The stop's error, when there is one, says more (a
                    // tracker's own error); else the failure itself.
                    (cause, r.stop(runtime, &log).and(Err(e)))
                }
            },
            Err(e) => (Cause::Failure(weir_view::chain::error_chain(&e)), Err(e)),
        };
    let marked = marks::stopped(&log, &cause);
    let closed = close_log(log);
    let stopped_at = marked.as_ref().ok().copied();
    result.and(marked.map(drop)).and(closed)?;
    info!(index = stopped_at, "weir stopped");
    Ok(())
}

/// Opens the log as its only writer, reporting what recovery did.
fn open_log(dir: &Path, config: &Config) -> Result<Log> {
    let log = match Log::open(dir, config.log.options()) {
        Ok(log) => log,
        Err(weir_log::Error::Locked { path, holder }) => {
            return Err(Error::LogLocked { path, holder });
        }
        Err(source) => {
            return Err(Error::Log {
                what: "opening the log",
                source,
            });
        }
    };
    let r = log.recovery();
    info!(
        dir = %log.dir().display(),
        next_index = r.next_index,
        segments = r.segments,
        "changelog open"
    );
    if let Some(t) = &r.torn {
        warn!(
            segment = %t.path.display(),
            dropped_records = t.dropped_records,
            dropped_bytes = t.dropped_bytes,
            "dropped a torn tail"
        );
    }
    if let Some(p) = &r.reset {
        warn!(segment = %p.display(), "reset the tail segment, which held no valid record");
    }
    if let Some((expected, found)) = r.gap_before_tail {
        error!(
            expected,
            found, "indexes are missing before the tail segment; readers will stop at the gap"
        );
    }
    Ok(log)
}

/// Closes the log durably, once every other holder has let go.
fn close_log(log: Arc<Log>) -> Result<()> {
    match Arc::try_unwrap(log) {
        Ok(log) => log.close().map_err(|source| Error::Log {
            what: "closing the log",
            source,
        }),
        Err(log) => {
            // Still shared (a stuck API task): make what is there durable;
            // the last holder's drop closes it.
            warn!("the log is still in use at exit; syncing it instead of closing");
            log.sync().map(drop).map_err(|source| Error::Log {
                what: "syncing the log",
                source,
            })
        }
    }
}
