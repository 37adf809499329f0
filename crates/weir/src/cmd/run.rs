//! `weir run`: the daemon. For now it hosts the changelog: it opens (and so
//! recovers) the log, marks its start, holds the writer lock until SIGTERM or
//! SIGINT, marks its stop and closes the log durably. The trackers and the
//! socket API come later and will append through this same `Log`.

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use tracing::{info, warn};
use weir_log::{Field, Log, Record, RecordType};

use crate::state_dir::StateDir;

pub(super) fn run(state: &StateDir) -> Result<()> {
    // Handlers first: a signal that arrives once the start is marked must
    // stop us cleanly, not kill us by its default action.
    let mut signals = Signals::new([SIGTERM, SIGINT]).context("cannot install signal handlers")?;
    let log = state.open_writer()?;
    report_recovery(&log);

    let pid = std::process::id().to_string();
    let started = log
        .append_durable(
            &Record::new(RecordType::MARK)
                .name(b"weir started")
                .fields(&[
                    Field {
                        key: "version",
                        value: env!("CARGO_PKG_VERSION").as_bytes(),
                    },
                    Field {
                        key: "pid",
                        value: pid.as_bytes(),
                    },
                ]),
        )
        .context("marking the start in the log")?;
    info!(
        index = started.index(),
        pid = %pid,
        "weir started; waiting for SIGTERM or SIGINT"
    );

    let signal = signals.forever().next().unwrap_or(SIGTERM);
    let name = if signal == SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    info!(signal = name, "stopping");
    let stopped = log
        .append_durable(
            &Record::new(RecordType::MARK)
                .name(b"weir stopped")
                .fields(&[Field {
                    key: "signal",
                    value: name.as_bytes(),
                }]),
        )
        .context("marking the stop in the log")?;
    log.close().context("closing the log")?;
    info!(index = stopped.index(), "weir stopped");
    Ok(())
}

fn report_recovery(log: &Log) {
    let r = log.recovery();
    info!(
        dir = %log.dir().display(),
        next_index = r.next_index,
        segments = r.segments,
        scanned_bytes = r.scanned_bytes,
        "changelog open"
    );
    if let Some(t) = &r.torn {
        warn!(
            segment = %t.path.display(),
            valid_end = t.valid_end,
            last_index = t.last_index,
            dropped_bytes = t.dropped_bytes,
            dropped_records = t.dropped_records,
            cause = ?t.cause,
            "dropped a torn tail"
        );
    }
    for p in &r.removed {
        warn!(segment = %p.display(), "removed a segment with no valid record");
    }
}
