//! Ctrl-C as a flag. `lvm` holds up to a thousand loop devices and a VG
//! that only its drop guards remove, so SIGINT and SIGTERM must not kill
//! the process outright: they raise a flag that every loop checks, and the
//! error that follows unwinds through the guards. A second signal, once
//! the flag is up, exits at once (the user insists).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use signal_hook::consts::{SIGINT, SIGTERM};

/// Raised by SIGINT or SIGTERM.
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Installs the handlers.
    pub(crate) fn install() -> Result<Stop> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // The conditional exit first: it sees the flag as it was before
            // this signal raised it.
            signal_hook::flag::register_conditional_shutdown(sig, 130, flag.clone())
                .context("cannot install a signal handler")?;
            signal_hook::flag::register(sig, flag.clone())
                .context("cannot install a signal handler")?;
        }
        Ok(Stop(flag))
    }

    /// Whether a signal came.
    pub(crate) fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for weir-lvmfleet's setups to watch.
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0
    }

    /// Fails once a signal came, so that the guards tear everything down.
    pub(crate) fn check(&self) -> Result<()> {
        if self.raised() {
            bail!("interrupted; tearing down");
        }
        Ok(())
    }
}
