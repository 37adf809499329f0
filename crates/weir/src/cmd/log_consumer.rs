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
use weir_view::consumer::consumer_json;

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

/// A consumer as its JSON form ([`consumer_json`]) gives it, for the text
/// forms of `consumer list` and `log stats`.
#[derive(Debug, Deserialize)]
pub(super) struct ConsumerRow {
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) mask: String,
    pub(super) cleared: u64,
    pub(super) lag: u64,
    pub(super) idle_seconds: f64,
}

impl ConsumerRow {
    /// Whole seconds idle, rounded down.
    pub(super) fn idle_secs(&self) -> u64 {
        // A float-to-int `as` saturates, and NaN gives 0: no panic on any
        // value the JSON holds.
        self.idle_seconds.floor() as u64
    }
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
            let c = ConsumerRow::deserialize(c).context("a consumer's JSON form")?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rows_read_the_json_form_of_a_consumer() {
        let info = ConsumerInfo {
            id: 4,
            name: "indexer".to_owned(),
            mask: TypeMask::parse("all,-MARK").unwrap(),
            cleared: 17,
            lag: 3,
            idle: Duration::from_millis(2999),
            registered_ns: 5,
        };
        let row = ConsumerRow::deserialize(&consumer_json(&info)).unwrap();
        assert_eq!((row.id, row.cleared, row.lag), (4, 17, 3));
        assert_eq!(row.name, "indexer");
        assert_eq!(row.mask, info.mask.to_string());
        assert_eq!(row.idle_secs(), info.idle.as_secs());
    }
}
