//! `weir log verify`: check every record's CRC and the index continuity,
//! with a progress bar on a terminal. The first problem is reported with
//! its segment, byte offset and index, and the command exits 1.
//!
//! Run it on a log no one is writing, or expect the active segment's tail
//! to be checked as it was at that moment.

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use weir_log::fs::StdFs;

use crate::state_dir::StateDir;

pub(super) fn verify(state: &StateDir) -> Result<()> {
    let dir = state.existing_log_dir()?;
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(0);
        if let Ok(style) =
            ProgressStyle::with_template("verifying {bar:40} {bytes}/{total_bytes} ({eta})")
        {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let rep = weir_log::verify(&StdFs, &dir, |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .with_context(|| format!("verifying {}", dir.display()))?;
    bar.finish_and_clear();

    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} segments, {} records, {} bytes checked",
        rep.segments, rep.records, rep.bytes
    )?;
    let Some(p) = rep.problem else {
        if rep.records > 0 {
            writeln!(out, "indexes {}-{}: ok", rep.first_index, rep.last_index)?;
        } else {
            writeln!(out, "no records: ok")?;
        }
        out.flush()?;
        return Ok(());
    };
    writeln!(
        out,
        "BAD: {} at byte offset {} (index {}): {}",
        p.path.display(),
        p.offset,
        p.index,
        p.kind
    )?;
    out.flush()?;
    bail!(
        "the log is damaged: first problem in {} at byte offset {}, index {}: {}",
        p.path.display(),
        p.offset,
        p.index,
        p.kind
    )
}
