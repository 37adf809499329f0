//! `weir log verify`: check every record's CRC, the index continuity, every
//! sealed segment's footer, and that nothing but zeros follows the records
//! of the unsealed tail (the next open would drop it), with a progress bar
//! on a terminal. The first problem is reported with its segment, byte
//! offset and index, and the command exits 1.
//!
//! It takes no lock. Records a writer appends to the tail, or a seal it
//! makes, while verify runs are checked, not reported; a record caught
//! half-written can still be.

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

    let mut out = crate::stdout::lock();
    let Some(p) = rep.problem else {
        writeln!(
            out,
            "{} segments, {} records, {} bytes checked",
            rep.segments, rep.records, rep.bytes
        )?;
        if rep.records > 0 {
            writeln!(out, "indexes {}-{}: ok", rep.first_index, rep.last_index)?;
        } else {
            writeln!(out, "no records: ok")?;
        }
        out.flush()?;
        return Ok(());
    };
    // Verify stops at the first problem: say how far it got, not how big
    // the log is.
    write!(
        out,
        "checked up to the first problem: {} segments, {} records",
        rep.segments, rep.records
    )?;
    if rep.records > 0 {
        write!(out, " (indexes {}-{})", rep.first_index, rep.last_index)?;
    }
    writeln!(out, ", {} bytes", rep.bytes)?;
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
