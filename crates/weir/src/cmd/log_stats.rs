//! `weir log stats`: sizes, indexes and consumers of the log: the daemon's
//! figures when one answers, otherwise read here without the writer's lock
//! (a snapshot that may trail a running writer slightly).
//!
//! Both paths produce the same JSON object, and the text form is printed
//! from that object, so the two cannot drift apart.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;
use weir_log::fs::StdFs;

use super::log_consumer::read_list;
use crate::daemon::{Route, print_json_line};
use crate::state_dir::StateDir;
use weir_view::consumer::{Consumer, consumer_json};

pub(super) fn stats(route: &Route, state: &StateDir, json: bool) -> Result<()> {
    let v = match route.log_client()? {
        Some(mut client) => client
            .get_json("/v1/log/stats")
            .context("asking the daemon for the log's figures")?,
        None => direct(state)?,
    };
    if json {
        print_json_line(&v)
    } else {
        print_text(&v)
    }
}

/// The figures, read from the log directory.
fn direct(state: &StateDir) -> Result<Value> {
    let dir = state.existing_log_dir()?;
    let s = weir_log::inspect(&StdFs, &dir).context("reading the log")?;
    let consumers = read_list(state)?;
    Ok(serde_json::json!({
        "dir": dir.display().to_string(),
        "segments": s.segments,
        "bytes": s.bytes,
        "allocated_bytes": s.allocated,
        "spare_bytes": s.spare_bytes,
        "first_index": s.first_index,
        "last_index": s.last_index,
        "records": s.records(),
        "consumers": consumers.iter().map(consumer_json).collect::<Vec<_>>(),
        // Only the writer knows.
        "poisoned": null,
    }))
}

/// The JSON object's fields that the text form shows.
#[derive(Deserialize)]
struct Figures {
    dir: String,
    segments: u64,
    bytes: u64,
    allocated_bytes: u64,
    /// Absent from a daemon older than the field.
    #[serde(default)]
    spare_bytes: u64,
    first_index: u64,
    last_index: u64,
    records: u64,
    consumers: Vec<Consumer>,
    /// `None`: unknown (read without the writer, or an older daemon).
    #[serde(default)]
    poisoned: Option<bool>,
}

fn print_text(v: &Value) -> Result<()> {
    let s = Figures::deserialize(v).context("the log's figures")?;
    let mut out = crate::stdout::lock();
    writeln!(out, "log:          {}", s.dir)?;
    if s.poisoned == Some(true) {
        writeln!(
            out,
            "state:        POISONED: an fsync failed, so writes are refused \
             until the log is reopened (restart the daemon)"
        )?;
    }
    writeln!(out, "segments:     {}", s.segments)?;
    writeln!(
        out,
        "bytes:        {} (allocated on disk: {})",
        s.bytes, s.allocated_bytes
    )?;
    if s.spare_bytes > 0 {
        writeln!(
            out,
            "spare:        {} bytes (the next segment, zero-filled ahead)",
            s.spare_bytes
        )?;
    }
    writeln!(out, "first index:  {}", s.first_index)?;
    writeln!(out, "last index:   {}", s.last_index)?;
    writeln!(out, "records:      {}", s.records)?;
    writeln!(out, "consumers:    {}", s.consumers.len())?;
    for c in &s.consumers {
        writeln!(
            out,
            "  {} (id {}): cleared {}, lag {}, idle {} s, mask {}",
            c.name,
            c.id,
            c.cleared,
            c.lag,
            c.idle_secs(),
            c.mask
        )?;
    }
    out.flush()?;
    Ok(())
}
