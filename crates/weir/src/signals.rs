//! Termination signals as a flag that long-running loops poll, so that they
//! stop between records and flush what they printed instead of dying
//! mid-line.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};

/// A flag that becomes true on SIGINT or SIGTERM.
pub(crate) fn stop_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register(sig, flag.clone())
            .context("cannot install a signal handler")?;
    }
    Ok(flag)
}
