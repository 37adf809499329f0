//! `weir sync`: the barrier. The daemon makes its trackers catch up with
//! the system (`POST /v1/sync`) and answers the log index up to which every
//! change made before the call is recorded.
//!
//! Without a daemon nothing tracks the system, so there is nothing to wait
//! for: that is an error, not a silent success.

use std::io::Write;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::daemon::Route;

#[derive(Deserialize)]
struct Synced {
    index: u64,
}

pub(super) fn sync(route: &Route, json: bool) -> Result<()> {
    if route.direct() {
        bail!("weir sync waits for the daemon; it has no --direct form");
    }
    let Some(mut client) = route.client()? else {
        bail!(
            "no daemon is running on {}: weir sync needs one",
            route.tried()
        );
    };
    let s: Synced = client
        .post("/v1/sync")
        .context("asking the daemon for a barrier")?;
    let mut out = crate::stdout::lock();
    if json {
        writeln!(out, "{}", serde_json::json!({ "index": s.index }))?;
    } else {
        writeln!(out, "{}", s.index)?;
    }
    out.flush()?;
    Ok(())
}
