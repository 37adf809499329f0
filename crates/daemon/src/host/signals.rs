//! The signals that stop the daemon, SIGTERM and SIGINT, as tokio streams.
//! They are installed first thing, before the log is opened: a signal that
//! arrives during the start then stops the daemon cleanly once it is up,
//! instead of killing it by the default action half-way.

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::{Error, Result};

/// The installed handlers.
pub(crate) struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// Installs the handlers; must run inside the runtime's context.
    pub(crate) fn install() -> Result<Signals> {
        let err = |source| Error::Runtime {
            what: "installing the signal handlers",
            source,
        };
        Ok(Signals {
            term: signal(SignalKind::terminate()).map_err(err)?,
            int: signal(SignalKind::interrupt()).map_err(err)?,
        })
    }

    /// Waits for either signal and names it.
    pub(crate) async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
