//! `weir log stats`: sizes, indexes and consumers of the log, read without
//! the writer's lock (a snapshot that may trail a running writer slightly).

use std::io::Write;

use anyhow::{Context, Result};
use weir_log::fs::StdFs;

use super::log_consumer::read_list;
use crate::state_dir::StateDir;
use weir_view::consumer::consumer_json;

pub(super) fn stats(state: &StateDir, json: bool) -> Result<()> {
    let dir = state.existing_log_dir()?;
    let s = weir_log::inspect(&StdFs, &dir).context("reading the log")?;
    let consumers = read_list(state)?;
    let mut out = std::io::stdout().lock();
    if json {
        let v = serde_json::json!({
            "dir": dir.display().to_string(),
            "segments": s.segments,
            "bytes": s.bytes,
            "allocated_bytes": s.allocated,
            "first_index": s.first_index,
            "last_index": s.last_index,
            "records": s.records(),
            "consumers": consumers.iter().map(consumer_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(out, "log:          {}", dir.display())?;
        writeln!(out, "segments:     {}", s.segments)?;
        writeln!(
            out,
            "bytes:        {} (allocated on disk: {})",
            s.bytes, s.allocated
        )?;
        writeln!(out, "first index:  {}", s.first_index)?;
        writeln!(out, "last index:   {}", s.last_index)?;
        writeln!(out, "records:      {}", s.records())?;
        writeln!(out, "consumers:    {}", consumers.len())?;
        for c in &consumers {
            writeln!(
                out,
                "  {} (id {}): cleared {}, lag {}, idle {} s, mask {}",
                c.name,
                c.id,
                c.cleared,
                c.lag,
                c.idle.as_secs(),
                c.mask
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
