//! `weir status`: what the daemon says of itself (`GET /v1/status`), as a
//! short summary for people ([`weir_view::status_text::summary`]) or, with
//! `--json`, the daemon's object as it sent it.
//!
//! Without a daemon it says so and exits 3, as `systemctl status` does for
//! a unit that is not running, so scripts can tell "not running" from a
//! failure (1).
//!
//! The summary reads the object into [`Status`], the struct the daemon
//! fills, whose figures are all optional: a figure the daemon does not
//! report (another version's) shows as `?` or is left out rather than
//! failing the command.

use std::io::Write;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use weir_view::consumer::Consumer;
use weir_view::status::Status;
use weir_view::status_text::summary;

use crate::daemon::{Route, print_json_line};

/// No daemon answers on the socket: `weir status` (and `weir fs`, which
/// has only the daemon to ask) exits 3 for it.
#[derive(Debug)]
pub(crate) struct NoDaemon {
    /// The sockets tried: "A" or "A or B".
    tried: String,
}

impl NoDaemon {
    /// Nothing answered on `tried` ("A" or "A or B").
    pub(crate) fn new(tried: String) -> NoDaemon {
        NoDaemon { tried }
    }
}

impl std::fmt::Display for NoDaemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no daemon answers on {}", self.tried)
    }
}

impl std::error::Error for NoDaemon {}

pub(super) fn status(route: &Route, json: bool) -> Result<()> {
    if route.direct() {
        bail!("weir status reports on the daemon; it has no --direct form");
    }
    let Some(mut client) = route.client()? else {
        return Err(NoDaemon::new(route.tried()).into());
    };
    // As a map first: `--json` prints every field the daemon sent, those
    // of a newer daemon included.
    let v: Value = client
        .get_json("/v1/status")
        .context("asking the daemon for its status")?;
    if json {
        return print_json_line(&v);
    }
    let status = Status::deserialize(&v).context("reading the daemon's status")?;
    // The status counts consumers; their cursors are a second question,
    // and only a detail: without an answer the count stays.
    let consumers = match client.get_json::<Vec<Consumer>>("/v1/log/consumers") {
        Ok(list) => Some(list),
        Err(e) => {
            tracing::debug!(error = %e, "no consumer list");
            None
        }
    };
    let mut out = crate::stdout::lock();
    out.write_all(summary(&status, consumers.as_deref()).as_bytes())?;
    out.flush()?;
    Ok(())
}
