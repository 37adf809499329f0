//! `weir log consumer`: register, list, clear and deregister consumers.
//!
//! With a daemon, each goes through its API. Without one, changes go
//! through the writer (they take the log's lock, so they fail clearly
//! while another process holds it), and `list` reads the state file
//! without the lock. Either way `list` prints from the consumers' JSON
//! form, so both paths print the same table.

use std::io::Write;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{Value, json};
use weir_client::{Client, encode_component};
use weir_log::fs::StdFs;
use weir_log::{ConsumerInfo, TypeMask};

use crate::cli::ConsumerCommand;
use crate::daemon::Route;
use crate::state_dir::StateDir;
use weir_view::consumer::{Consumer, consumer_json};

pub(super) fn consumer(route: &Route, state: &StateDir, command: ConsumerCommand) -> Result<()> {
    if let Some(mut client) = route.log_client()? {
        return via_daemon(&mut client, command);
    }
    match command {
        ConsumerCommand::Register { name, mask } => {
            let log = state.open_writer()?;
            let id = log
                .register(&name, mask.unwrap_or_else(TypeMask::all))
                .with_context(|| format!("registering consumer {name}"))?;
            log.close().context("closing the log")?;
            let mut out = crate::stdout::lock();
            writeln!(out, "{id}")?;
            out.flush()?;
            Ok(())
        }
        ConsumerCommand::List(a) => {
            let list: Vec<Value> = read_list(state)?.iter().map(consumer_json).collect();
            print_list(&list, a.json)
        }
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

/// The answer to a registration.
#[derive(Deserialize)]
struct Registered {
    id: u64,
}

fn via_daemon(client: &mut Client, command: ConsumerCommand) -> Result<()> {
    match command {
        ConsumerCommand::Register { name, mask } => {
            let mask = mask.unwrap_or_else(TypeMask::all).to_string();
            let r: Registered = client
                .post_json("/v1/log/consumers", &json!({"name": name, "mask": mask}))
                .with_context(|| format!("registering consumer {name}"))?;
            let mut out = crate::stdout::lock();
            writeln!(out, "{}", r.id)?;
            out.flush()?;
            Ok(())
        }
        ConsumerCommand::List(a) => {
            let list: Vec<Value> = client
                .get_json("/v1/log/consumers")
                .context("asking the daemon for its consumers")?;
            print_list(&list, a.json)
        }
        ConsumerCommand::Clear { name, index } => {
            let target = format!("/v1/log/consumers/{}/clear", encode_component(&name));
            client
                .post_json::<_, Value>(&target, &json!({"index": index}))
                .with_context(|| format!("clearing consumer {name}"))?;
            Ok(())
        }
        ConsumerCommand::Deregister { name } => {
            let target = format!("/v1/log/consumers/{}", encode_component(&name));
            client
                .delete(&target)
                .with_context(|| format!("deregistering consumer {name}"))
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

/// Prints consumers (their JSON forms) one per line, or as a table.
fn print_list(list: &[Value], json: bool) -> Result<()> {
    let mut out = crate::stdout::lock();
    if json {
        for c in list {
            writeln!(out, "{c}")?;
        }
    } else {
        writeln!(
            out,
            "{:>4}  {:<24} {:>12} {:>12} {:>10}  MASK",
            "ID", "NAME", "CLEARED", "LAG", "IDLE_S"
        )?;
        for c in list {
            let c = Consumer::deserialize(c).context("a consumer's JSON form")?;
            writeln!(
                out,
                "{:>4}  {:<24} {:>12} {:>12} {:>10}  {}",
                c.id,
                c.name,
                c.cleared,
                c.lag,
                c.idle_secs(),
                c.mask
            )?;
        }
    }
    out.flush()?;
    Ok(())
}
