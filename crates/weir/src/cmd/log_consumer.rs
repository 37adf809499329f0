//! `weir log consumer`: register, list, clear and deregister consumers.
//!
//! Changes go through the writer (they take the log's lock, so they fail
//! clearly while `weir run` holds it); `list` reads the state file without
//! the lock, so it works beside a running writer.

use std::io::Write;

use anyhow::{Context, Result};
use weir_log::fs::StdFs;
use weir_log::{ConsumerInfo, TypeMask};

use crate::cli::ConsumerCommand;
use crate::state_dir::StateDir;
use weir_view::consumer::consumer_json;

pub(super) fn consumer(state: &StateDir, command: ConsumerCommand) -> Result<()> {
    match command {
        ConsumerCommand::Register { name, mask } => {
            let log = state.open_writer()?;
            let id = log
                .register(&name, mask.unwrap_or_else(TypeMask::all))
                .with_context(|| format!("registering consumer {name}"))?;
            log.close().context("closing the log")?;
            println!("{id}");
            Ok(())
        }
        ConsumerCommand::List(a) => list(state, a.json),
        ConsumerCommand::Clear { name, index } => {
            let log = state.open_writer()?;
            log.clear(&name, index)
                .with_context(|| format!("clearing consumer {name}"))?;
            log.close().context("closing the log")
        }
        ConsumerCommand::Deregister { name } => {
            let log = state.open_writer()?;
            log.deregister(&name)
                .with_context(|| format!("deregistering consumer {name}"))?;
            log.close().context("closing the log")
        }
    }
}

/// Reads the consumers of the log in `state` without its lock, with their
/// lag against the last record found on disk.
pub(super) fn read_list(state: &StateDir) -> Result<Vec<ConsumerInfo>> {
    let dir = state.existing_log_dir()?;
    let summary = weir_log::inspect(&StdFs, &dir).context("reading the log")?;
    weir_log::read_consumers(&StdFs, &dir, summary.last_index, super::now_ns())
        .context("reading the consumer list")
}

fn list(state: &StateDir, json: bool) -> Result<()> {
    let list = read_list(state)?;
    let mut out = std::io::stdout().lock();
    if json {
        for c in &list {
            writeln!(out, "{}", consumer_json(c))?;
        }
    } else {
        writeln!(
            out,
            "{:>4}  {:<24} {:>12} {:>12} {:>10}  MASK",
            "ID", "NAME", "CLEARED", "LAG", "IDLE_S"
        )?;
        for c in &list {
            writeln!(
                out,
                "{:>4}  {:<24} {:>12} {:>12} {:>10}  {}",
                c.id,
                c.name,
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
