//! The MARK records the host writes about itself: its start, a start
//! without a previous inventory, and its stop. Each is durable before the
//! daemon goes on, so a consumer sees them in order with the records they
//! frame.

use weir_log::{Field, Log, Record, RecordType};

use crate::{Error, Result};

fn mark(log: &Log, name: &str, fields: &[(&'static str, &str)], what: &'static str) -> Result<u64> {
    let fields: Vec<Field<'_>> = fields
        .iter()
        .map(|(key, value)| Field {
            key,
            value: value.as_bytes(),
        })
        .collect();
    log.append_durable(
        &Record::new(RecordType::MARK)
            .name(name.as_bytes())
            .fields(&fields),
    )
    .map(|d| d.index())
    .map_err(|source| Error::Log { what, source })
}

/// `weir started`: the version and pid.
pub(crate) fn started(log: &Log) -> Result<u64> {
    let pid = std::process::id().to_string();
    mark(
        log,
        "weir started",
        &[("version", env!("CARGO_PKG_VERSION")), ("pid", &pid)],
        "marking the start in the log",
    )
}

/// `weir no previous inventory`: the start cannot tell what changed while
/// no daemon watched, and says why; a consumer must re-read what it needs.
pub(crate) fn no_previous(log: &Log, reason: &str) -> Result<u64> {
    mark(
        log,
        "weir no previous inventory",
        &[("reason", reason)],
        "marking a start without a previous inventory",
    )
}

/// What ended a run.
#[derive(Debug)]
pub(crate) enum Cause {
    /// A signal, by name (`SIGTERM`, `SIGINT`).
    Signal(&'static str),
    /// A failure, as its error chain.
    Failure(String),
}

/// `weir stopped`: with the `signal` that stopped it, or the `error`.
pub(crate) fn stopped(log: &Log, cause: &Cause) -> Result<u64> {
    let field = match cause {
        Cause::Signal(name) => ("signal", *name),
        Cause::Failure(why) => ("error", why.as_str()),
    };
    mark(log, "weir stopped", &[field], "marking the stop in the log")
}
