//! `weir log stats`: sizes, indexes, retention and consumers of the log:
//! the daemon's figures when one answers, otherwise read here without the
//! writer's lock (a snapshot that may trail a running writer slightly),
//! with the retention a writer opened here would apply (the configuration
//! file's `[log]`).
//!
//! Both paths produce weir-view's [`LogStats`], and the text form is
//! printed from it ([`weir_view::log_stats::text`]), so the two cannot
//! drift apart.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;
use weir_log::fs::StdFs;

use super::log_consumer::read_list;
use crate::daemon::{Route, print_json_line};
use crate::state_dir::StateDir;
use weir_view::consumer::Consumer;
use weir_view::log_stats::{self, LogRetention, LogStats};

pub(super) fn stats(route: &Route, state: &StateDir, json: bool) -> Result<()> {
    // As a map: `--json` prints every field the daemon sent, those of a
    // newer daemon included.
    let v: Value = match route.log_client()? {
        Some(mut client) => client
            .get_json("/v1/log/stats")
            .context("asking the daemon for the log's figures")?,
        None => serde_json::to_value(direct(state)?)?,
    };
    if json {
        return print_json_line(&v);
    }
    let s = LogStats::deserialize(&v).context("the log's figures")?;
    let mut out = crate::stdout::lock();
    out.write_all(log_stats::text(&s).as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The figures, read from the log directory.
fn direct(state: &StateDir) -> Result<LogStats> {
    let dir = state.existing_log_dir()?;
    let s = weir_log::inspect(&StdFs, &dir).context("reading the log")?;
    let consumers = read_list(state)?;
    // A configuration that cannot be read leaves the retention unknown
    // rather than failing a command that only reads.
    let retention = match state.log_options() {
        Ok(o) => Some(LogRetention::from(&o.retention)),
        Err(e) => {
            eprintln!("weir: warning: retention unknown: {e:#}");
            None
        }
    };
    let incarnation = weir_log::read_incarnation(&StdFs, &dir)
        .context("reading the log's incarnation")?
        .map(|i| i.to_string());
    Ok(LogStats {
        dir: dir.display().to_string(),
        incarnation,
        segments: s.segments as u64,
        bytes: s.bytes,
        allocated_bytes: s.allocated,
        spare_bytes: s.spare_bytes,
        first_index: s.first_index,
        last_index: s.last_index,
        records: s.records(),
        consumers: consumers.iter().map(Consumer::from).collect(),
        // Only the writer knows.
        poisoned: None,
        retention,
    })
}
